//! Turns a capture into what a tap and a capture host make of it (README, docs/tap.md):
//! each frame gets a hardware trailer holding its recorded time (the wire's), and is
//! recorded instead at a host's later time — requests `--request-delay-us` after the wire,
//! responses `--response-delay-us` after it — in the host's order.
//!
//! ```text
//! cargo run --release -p fixscope-core --example add_trailers -- IN.pcap OUT.pcap \
//!     [--kind hpt|metawatch|none] [--port 9878] [--request-delay-us 30] [--response-delay-us 5]
//! ```
//!
//! IN is a little-endian nanosecond pcap of Ethernet frames (what `gen_capture` writes).
//! `--kind none` writes the host's times alone, the same frames without trailers.

use std::io::BufWriter;

use fixscope_core::decode::{decode, Decoded, LinkType};
use fixscope_core::pcap_writer::{CaptureFormat, CaptureWriter};
use fixscope_core::wire_stamp::{trailer_for, TrailerKind, WireStamp};

fn usage() -> ! {
    eprintln!(
        "usage: add_trailers IN.pcap OUT.pcap [--kind hpt|metawatch|none] [--port P] [--request-delay-us N] [--response-delay-us N]"
    );
    std::process::exit(2)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        usage();
    }
    let (input, output) = (&args[0], &args[1]);
    let (mut kind, mut port, mut request_us, mut response_us) =
        (Some(TrailerKind::Hpt), 9878u16, 30u64, 5u64);
    let mut it = args[2..].iter();
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--kind" => {
                kind = match value.as_str() {
                    "hpt" => Some(TrailerKind::Hpt),
                    "metawatch" => Some(TrailerKind::MetaWatch),
                    "none" => None,
                    _ => usage(),
                }
            }
            "--port" => port = value.parse().unwrap_or_else(|_| usage()),
            "--request-delay-us" => request_us = value.parse().unwrap_or_else(|_| usage()),
            "--response-delay-us" => response_us = value.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    let bytes = std::fs::read(input)?;
    if bytes.len() < 24 || bytes[..4] != 0xA1B2_3C4Du32.to_le_bytes() {
        eprintln!("{input}: not a little-endian nanosecond pcap");
        std::process::exit(1);
    }
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let wire_ns = u64::from(le(at)) * 1_000_000_000 + u64::from(le(at + 4));
        let len = le(at + 8) as usize;
        let Some(frame) = bytes.get(at + 16..at + 16 + len) else {
            break;
        };
        at += 16 + len;
        let response = matches!(decode(LinkType::Ethernet, frame),
            Ok(Decoded::Tcp(t)) if t.flow.src.port == port);
        let mut frame = frame.to_vec();
        if frame.len() < 60 {
            frame.resize(60, 0); // the wire's padding, which the tap's FCS covers
        }
        if let Some(kind) = kind {
            let stamp = WireStamp {
                kind,
                device: 1,
                port: u8::from(response),
                unix_ns: wire_ns,
            };
            let trailer = trailer_for(&frame, &stamp, false);
            frame.extend_from_slice(&trailer);
        }
        let delay_us = if response { response_us } else { request_us };
        frames.push((wire_ns + delay_us * 1_000, frame));
    }
    // The host's order: by its own times (stable, so each direction keeps its order).
    frames.sort_by_key(|(host_ns, _)| *host_ns);
    let out = BufWriter::new(std::fs::File::create(output)?);
    let mut w = CaptureWriter::new(out, CaptureFormat::pcap_nanos(), LinkType::Ethernet)?;
    for (host_ns, frame) in &frames {
        w.write_packet(*host_ns, frame)?;
    }
    w.finish()?;
    println!("wrote {} frames to {output}", frames.len());
    Ok(())
}
