//! Rank of the reported percentiles (found by the live end-to-end tests).
//!
//! fixscope asks the histogram for `pct / 100.0` (fixscope-core `stats.rs`,
//! `value_at_quantile(q / 100.0)` with `q` from `PERCENTILES`), and `99.9 / 100.0` is
//! `0.9990000000000001` in f64. HDR's nearest rank is `ceil(q * n)`, so for any count that
//! is a multiple of 1000 the reported p99.9 is one rank too high: with 1000 latencies it is
//! the maximum instead of the 999th value. This capture holds 999 orders acked after 100 µs
//! and one acked after 10 ms, so p99.9 must be 100 µs; fixscope reports 10 ms.

mod support;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{CaptureFormat, FrameOptions, SyntheticConnection};
use support::*;

#[test]
fn p99_9_of_1000_latencies_is_the_999th_value() {
    let server = endpoint(false, 1, SERVER_PORT);
    let mut conn = SyntheticConnection::new(endpoint(false, 2, 40000), server);
    let t0 = 1_700_000_000_000_000_000u64;
    let mut packets = Vec::new();
    for p in conn.handshake() {
        packets.push(TimedPacket {
            ts_ns: t0,
            spec: p,
            iface: 0,
        });
    }
    let mut latencies = Vec::new();
    for i in 0..1000u64 {
        let t = t0 + 1_000_000 + i * 20_000_000;
        let lat = if i == 500 { 10_000_000 } else { 100_000 };
        let id = format!("ORD{i:06}");
        let order = fix_message(
            "FIX.4.4",
            &[
                (35, "D"),
                (49, "C"),
                (56, "X"),
                (11, &id),
                (55, "IBM"),
                (54, "1"),
                (38, "1"),
            ],
        );
        let ack = fix_message(
            "FIX.4.4",
            &[
                (35, "8"),
                (49, "X"),
                (56, "C"),
                (11, &id),
                (150, "0"),
                (39, "0"),
            ],
        );
        packets.push(TimedPacket {
            ts_ns: t,
            spec: conn.client_sends(&order),
            iface: 0,
        });
        packets.push(TimedPacket {
            ts_ns: t + lat,
            spec: conn.server_sends(&ack),
            iface: 0,
        });
        latencies.push(lat);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank.pcap");
    let format = CaptureFormat::Pcap {
        nanos: true,
        big_endian: false,
    };
    write_capture(
        &path,
        &packets,
        format,
        LinkType::Ethernet,
        &FrameOptions::default(),
        None,
    );
    let (_, summary) = analyse(&[&path], &["-r", "0"]);
    latencies.sort_unstable();
    assert_eq!(exact_percentile(&latencies, 0.999), 100_000);
    let ack = stage(&summary, "ack");
    assert_eq!(ack["count"], 1000);
    assert_eq!(ack["max_ns"], 10_000_000);
    // Percentiles are a histogram bucket's upper edge: within 0.1% of the exact value.
    assert!(ack["p99_ns"].as_u64().unwrap() <= 100_100, "{ack}");
    let p99_9 = ack["p99_9_ns"].as_u64().unwrap();
    assert!(
        p99_9 <= 100_100,
        "p99.9 of 999 x 100 µs and 1 x 10 ms must be 100 µs (the 999th value), got {p99_9} ns: \
         the rank is ceil(0.9990000000000001 * 1000) = 1000"
    );
}
