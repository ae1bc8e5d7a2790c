//! Capture reading alone (file → decode → classified `Segment`s): pcap and pcapng files of
//! 200,000 Ethernet/IPv4/TCP packets with 180-byte payloads, alternating directions.
//!
//! `cargo bench -p fixscope-core --bench capture_read` — figures in BENCHMARKS.md.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fixscope_core::decode::LinkType;
use fixscope_core::pcap::{read_capture, CaptureStats};
use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
use fixscope_core::{Endpoint, PortSet};

const PACKETS: u64 = 200_000;

fn write_capture(path: &Path, format: CaptureFormat) {
    let endpoint = |addr: &str, port| Endpoint {
        addr: addr.parse().unwrap(),
        port,
    };
    let mut conn = SyntheticConnection::new(
        endpoint("192.168.1.10", 40000),
        endpoint("192.168.1.20", 9878),
    );
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = CaptureWriter::new(file, format, LinkType::Ethernet).unwrap();
    let msg = [b'F'; 180];
    for i in 0..PACKETS {
        let spec = if i % 2 == 0 {
            conn.client_sends(&msg)
        } else {
            conn.server_sends(&msg)
        };
        w.write_tcp(1_700_000_000_000_000_000 + i * 1000, &spec)
            .unwrap();
    }
    w.finish().unwrap();
}

fn bench_capture_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ports = PortSet::single(9878);
    let mut group = c.benchmark_group("capture_read");
    group.throughput(Throughput::Elements(PACKETS));
    group.sample_size(20);
    for (name, format) in [
        ("pcap_ns", CaptureFormat::pcap_nanos()),
        ("pcapng_ns", CaptureFormat::pcapng_nanos()),
    ] {
        let path = dir.path().join(format!("{name}.cap"));
        write_capture(&path, format);
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut stats = CaptureStats::default();
                let mut bytes = 0usize;
                read_capture(&path, &ports, &mut stats, |s| bytes += s.payload.len()).unwrap();
                assert_eq!(stats.segments_in_port_range, PACKETS);
                bytes
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_capture_read);
criterion_main!(benches);
