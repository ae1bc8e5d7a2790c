//! The independent check of the framing: a capture of MoldUDP64 datagrams (Ethernet,
//! IPv4, UDP, built here: the capture layer's writer builds TCP only) written from this
//! crate's encoder — packets of several messages, a heartbeat, an end of session, a
//! retransmission request and its answer — read by Wireshark's MoldUDP64 dissector
//! (packet-moldudp64.c) and by this crate; per frame, both must report the same session,
//! sequence number, count, and each message's length, sequence number and bytes.
//! Wireshark has no ITCH 5.0 dissector (its nasdaq_itch is ITCH 2.0/3.0), so the
//! messages' own check is the spec's sizes (`decode`, and itch50's field-width test).

use std::collections::BTreeMap;
use std::process::Command;

use super::samples;
use fixscope_capture::decode::LinkType;
use fixscope_capture::pcap_writer::{CaptureFormat, CaptureWriter};
use fixscope_itch::encode;
use fixscope_itch::moldudp64::{self, Packet};

const FEED_PORT: u16 = 26_477;
const REQUEST_PORT: u16 = 26_478;

const FIELDS: &[&str] = &[
    "moldudp64.session",
    "moldudp64.sequence",
    "moldudp64.count",
    "moldudp64.msglen",
    "moldudp64.msgseq",
    "moldudp64.msgdata",
];

/// Field values per frame number, each field's values in order.
type Report = BTreeMap<u32, BTreeMap<&'static str, Vec<String>>>;

/// The datagrams, in capture order: (to the re-request server?, payload).
fn datagrams() -> Vec<(bool, Vec<u8>)> {
    let all: Vec<Vec<u8>> = samples::every_read_type()
        .iter()
        .map(encode::message)
        .collect();
    let refs: Vec<&[u8]> = all.iter().map(|m| m.as_slice()).collect();
    let s = b"SESSION042";
    vec![
        (false, encode::downstream(s, 1, &refs[..2])),
        (false, encode::downstream(s, 3, &refs[2..7])),
        (false, encode::downstream(s, 8, &refs[7..8])),
        (false, encode::heartbeat(s, 9)),
        // 9..=11 lost; the listener asks for them and gets the same packet unicast.
        (false, encode::downstream(s, 12, &refs[11..])),
        (true, encode::request(s, 9, 3)),
        (false, encode::downstream(s, 9, &refs[8..11])),
        (false, encode::end_of_session(s, 13)),
        // A session with padding in its name.
        (false, encode::downstream(b"NEXT", 1, &refs[..1])),
    ]
}

fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet II / IPv4 / UDP frame (UDP checksum 0: none, allowed over IPv4).
fn udp_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload.len());
    f.extend_from_slice(&[0x01, 0x00, 0x5e, dst[1] & 0x7f, dst[2], dst[3]]);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

fn write_capture(path: &std::path::Path) {
    let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet)
        .expect("a writer");
    let mut ts = 1_719_840_600_000_000_000u64; // 2024-07-01 13:30 UTC, the open.
    for (to_server, payload) in datagrams() {
        let frame = if to_server {
            udp_frame([10, 0, 0, 2], [10, 0, 0, 1], 40_000, REQUEST_PORT, &payload)
        } else {
            udp_frame(
                [10, 0, 0, 1],
                [233, 54, 12, 111],
                40_001,
                FEED_PORT,
                &payload,
            )
        };
        w.write_packet(ts, &frame).expect("written");
        ts += 1_000;
    }
    std::fs::write(path, w.finish().expect("finished")).expect("capture written");
}

fn tshark_report(path: &std::path::Path) -> Report {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(path)
        .args(["-d", &format!("udp.port=={FEED_PORT},moldudp64")])
        .args(["-d", &format!("udp.port=={REQUEST_PORT},moldudp64")])
        .args(["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a"])
        .args(["-e", "frame.number"]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => panic!(
            "tshark is needed for the Wireshark cross-check and could not run ({e}): \
             run scripts/install-deps.sh"
        ),
    };
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut report = Report::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let frame: u32 = cols[0].parse().expect("a frame number");
        let fields = report.entry(frame).or_default();
        for (name, col) in FIELDS.iter().zip(&cols[1..]) {
            if !col.is_empty() {
                fields.insert(name, col.split(',').map(|v| v.trim().to_string()).collect());
            }
        }
    }
    report
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn our_report() -> Report {
    let mut report = Report::new();
    for (i, (_, payload)) in datagrams().iter().enumerate() {
        let fields = report.entry(i as u32 + 1).or_default();
        let mut add = |name: &'static str, v: String| fields.entry(name).or_default().push(v);
        let (session, sequence, count) = match moldudp64::decode(payload).expect("decodes") {
            Packet::Request(r) => (r.session, r.sequence, r.count),
            Packet::Downstream(p) => {
                for (seq, m) in p.messages() {
                    add("moldudp64.msglen", m.len().to_string());
                    add("moldudp64.msgseq", seq.to_string());
                    add("moldudp64.msgdata", hex(m));
                }
                (p.header.session, p.header.sequence, p.header.count)
            }
        };
        let name = String::from_utf8_lossy(session.as_bytes())
            .trim()
            .to_string();
        add("moldudp64.session", name);
        add("moldudp64.sequence", sequence.to_string());
        add("moldudp64.count", count.to_string());
    }
    report
}

#[test]
fn wiresharks_moldudp64_dissector_reads_what_we_read() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("fixscope-itch-tshark.pcap");
    write_capture(&path);
    let theirs = tshark_report(&path);
    let ours = our_report();
    let _ = std::fs::remove_file(&path);
    assert_eq!(ours.len(), datagrams().len());
    assert_eq!(theirs, ours);
}
