//! Writes a market-data capture for benchmarks (BENCHMARKS.md §11, scripts/bench-md.sh):
//! an A/B pair of Nasdaq ITCH 5.0 feeds over MoldUDP64, `--packets N` packets of
//! `--messages M` Add Order messages (36 bytes each) on each feed, A at 2 µs spacing, B's
//! copy 900 ns later.
//!
//! ```text
//! cargo run --release -p fixscope-core --example gen_md_capture -- OUT.pcap \
//!     [--packets N] [--messages M]
//! ```

use std::fs::File;
use std::io::BufWriter;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter};
use fixscope_itch::encode;
use fixscope_itch::itch50::{AddOrder, Message, Symbol};

const START_NS: u64 = 1_718_011_800_000_000_000;
const PORT: u16 = 26_400;

/// An Ethernet II / IPv4 / UDP frame to `dst`:PORT (UDP checksum 0: none).
fn udp_frame(dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x01,
        0x00,
        0x5e,
        dst[1] & 0x7f,
        dst[2],
        dst[3],
        2,
        0,
        0,
        0,
        0,
        1,
        8,
        0,
    ];
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1]);
    ip.extend_from_slice(&dst);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&40_000u16.to_be_bytes());
    f.extend_from_slice(&PORT.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args.next().expect("OUT.pcap");
    let (mut packets, mut per_packet) = (1_000_000u64, 5u64);
    while let Some(flag) = args.next() {
        let value: u64 = args.next().and_then(|v| v.parse().ok()).expect("a number");
        match flag.as_str() {
            "--packets" => packets = value,
            "--messages" => per_packet = value,
            other => panic!("unknown flag {other}"),
        }
    }
    let file = BufWriter::new(File::create(&out).expect("create OUT"));
    let mut w = CaptureWriter::new(file, CaptureFormat::pcap_nanos(), LinkType::Ethernet)
        .expect("a writer");
    let mut seq = 1u64;
    for p in 0..packets {
        let t = START_NS + p * 2_000;
        let messages: Vec<Vec<u8>> = (0..per_packet)
            .map(|k| {
                encode::message(&Message::AddOrder(AddOrder {
                    header: encode::itch_header_of(b'A', 1, 34_200_000_000_000 + p * 2_000 + k),
                    order_reference_number: seq + k,
                    side: b'B',
                    shares: 100,
                    stock: Symbol(*b"AAPL    "),
                    price: 1_895_000,
                    attribution: None,
                }))
            })
            .collect();
        let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        let body = encode::downstream(b"SESSION001", seq, &refs);
        w.write_packet(t, &udp_frame([233, 54, 12, 1], &body))
            .expect("written");
        w.write_packet(t + 900, &udp_frame([233, 54, 12, 2], &body))
            .expect("written");
        seq += per_packet;
    }
    w.finish().expect("finished");
    println!(
        "{} datagrams, {} messages per feed, {out}",
        2 * packets,
        packets * per_packet
    );
}
