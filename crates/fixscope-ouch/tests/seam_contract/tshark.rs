//! The independent check: a capture of an OUCH 4.2 session over SoupBinTCP, written with
//! the capture layer's writer, read by Wireshark's own dissectors (packet-soupbintcp.c,
//! packet-ouch.c) and by this crate; for every frame, the packet types and OUCH fields
//! each reports must be the same. One packet is split across two segments and one segment
//! holds two packets, so both report a packet at the frame that completes it.

use std::collections::BTreeMap;
use std::process::Command;

use super::samples;
use fixscope_capture::decode::LinkType;
use fixscope_capture::pcap_writer::{CaptureFormat, CaptureWriter, SyntheticConnection};
use fixscope_model::segment::Endpoint;
use fixscope_ouch::encode::{self, ouch42_packet};
use fixscope_ouch::ouch42::{self, Message};
use fixscope_ouch::soupbin::{self, SoupBinFramer, SoupPacket};
use fixscope_protocol::{ByteTimes, Framer, FramingCounters};

const PORT: u16 = 15001;

/// tshark's fields, in its `-e` order. Not the sequence numbers: Wireshark puts them
/// in the display text only (the fields' value is a placeholder, `X`).
const FIELDS: &[&str] = &[
    "soupbintcp.packet_type",
    "soupbintcp.username",
    "soupbintcp.session",
    "ouch.packet_type",
    "ouch.order_token",
    "ouch.existing_order_token",
    "ouch.replacement_order_token",
    "ouch.previous_order_token",
    "ouch.shares",
    "ouch.executed_shares",
    "ouch.decrement_shares",
    "ouch.match_number",
    "ouch.cancel_reason",
    "ouch.reject_reason",
    "ouch.timestamp",
];

/// Field values per frame number, each field's values in packet order.
type Report = BTreeMap<u32, BTreeMap<&'static str, Vec<String>>>;

/// The segments, in capture order: (from the client?, payload).
fn segments() -> Vec<(bool, Vec<u8>)> {
    let ts = 34_200_123_456_789; // 9:30:00.123456789
    let enter = ouch42_packet(&samples::enter42(b"ORD00000000001"));
    let cancel = ouch42_packet(&Message::CancelOrder {
        token: b"ORD00000000002",
        shares: 0,
    });
    let executed = ouch42_packet(&Message::Executed {
        timestamp_ns: ts + 7,
        token: b"ORD00000000002",
        executed_shares: 100,
        execution_price: 1_894_900,
        liquidity_flag: b'A',
        match_number: 5_550_001,
    });
    let canceled = ouch42_packet(&Message::Canceled {
        timestamp_ns: ts + 9,
        token: b"ORD00000000002",
        decrement_shares: 100,
        reason: b'U',
    });
    vec![
        (true, encode::login_request(b"USER01", b"pw", b"", Some(1))),
        (false, encode::login_accepted(b"SESSION042", 1)),
        (true, enter),
        (
            false,
            ouch42_packet(&Message::Accepted(samples::accepted42(
                b"ORD00000000001",
                ts,
            ))),
        ),
        (
            true,
            ouch42_packet(&samples::replace42(b"ORD00000000001", b"ORD00000000002")),
        ),
        (
            false,
            ouch42_packet(&Message::Replaced(ouch42::Replaced {
                accepted: samples::accepted42(b"ORD00000000002", ts + 3),
                previous_token: b"ORD00000000001",
            })),
        ),
        (false, [executed, canceled].concat()),
        (true, cancel[..5].to_vec()),
        (true, cancel[5..].to_vec()),
        (
            false,
            ouch42_packet(&Message::Rejected {
                timestamp_ns: ts + 11,
                token: b"ORD9",
                reason: b'S',
            }),
        ),
        (false, encode::packet(b'H', b"")),
        (true, encode::packet(b'R', b"")),
    ]
}

fn ep(addr: &str, port: u16) -> Endpoint {
    Endpoint {
        addr: addr.parse().expect("an address"),
        port,
    }
}

/// Writes the capture; returns the frame number of each segment (tshark counts from 1).
fn write_capture(path: &std::path::Path) -> Vec<u32> {
    let mut conn = SyntheticConnection::new(ep("10.9.0.1", 40001), ep("10.9.0.2", PORT));
    let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::pcap_nanos(), LinkType::Ethernet)
        .expect("a writer");
    let mut ts = 1_700_000_000_000_000_000u64;
    let mut frame = 0;
    for spec in conn.handshake() {
        w.write_tcp(ts, &spec).expect("written");
        ts += 1_000;
        frame += 1;
    }
    let mut numbers = Vec::new();
    for (from_client, payload) in segments() {
        let spec = if from_client {
            conn.client_sends(&payload)
        } else {
            conn.server_sends(&payload)
        };
        w.write_tcp(ts, &spec).expect("written");
        ts += 1_000;
        frame += 1;
        numbers.push(frame);
    }
    std::fs::write(path, w.finish().expect("finished")).expect("capture written");
    numbers
}

/// tshark's dissection of `path`.
fn tshark_report(path: &std::path::Path) -> Report {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(path)
        .args(["-d", &format!("tcp.port=={PORT},soupbintcp")])
        .args(["-o", "tcp.desegment_tcp_streams:TRUE"])
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
                fields.insert(name, col.split(',').map(normalise).collect());
            }
        }
        if fields.is_empty() {
            report.remove(&frame);
        }
    }
    report
}

/// tshark writes a character field quoted (`'L'`) and a string field with its padding.
fn normalise(value: &str) -> String {
    let v = value.trim_matches(' ');
    match v.as_bytes() {
        [b'\'', c, b'\''] => char::from(*c).to_string(),
        _ => v.to_string(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(soupbin::trim_spaces(b)).into_owned()
}

/// Nanoseconds since midnight as Wireshark writes them.
fn clock(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    format!(
        "{}:{:02}:{:02}.{:09}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ns % 1_000_000_000
    )
}

/// What this crate reads of one packet, as tshark's fields.
fn fields_of(packet: &SoupPacket<'_>, add: &mut dyn FnMut(&'static str, String)) {
    add(
        "soupbintcp.packet_type",
        char::from(packet.packet_type()).into(),
    );
    match *packet {
        SoupPacket::LoginRequest {
            username,
            requested_session,
            ..
        } => {
            add("soupbintcp.username", text(username));
            add("soupbintcp.session", text(requested_session));
        }
        SoupPacket::LoginAccepted { session, .. } => add("soupbintcp.session", text(session)),
        _ => {}
    }
    let Some(message) = ouch42::decode(packet) else {
        return;
    };
    let message = message.expect("our sample messages read");
    let ch = |c: u8| char::from(c).to_string();
    match message {
        Message::EnterOrder(o) => {
            add("ouch.packet_type", ch(b'O'));
            add("ouch.order_token", text(o.token));
            add("ouch.shares", o.shares.to_string());
        }
        Message::ReplaceOrder(r) => {
            add("ouch.packet_type", ch(b'U'));
            add("ouch.existing_order_token", text(r.existing_token));
            add("ouch.replacement_order_token", text(r.replacement_token));
            add("ouch.shares", r.shares.to_string());
        }
        Message::CancelOrder { token, shares } => {
            add("ouch.packet_type", ch(b'X'));
            add("ouch.order_token", text(token));
            add("ouch.shares", shares.to_string());
        }
        Message::Accepted(a) => {
            add("ouch.packet_type", ch(b'A'));
            add("ouch.timestamp", clock(a.timestamp_ns));
            add("ouch.order_token", text(a.token));
            add("ouch.shares", a.shares.to_string());
        }
        Message::Replaced(r) => {
            add("ouch.packet_type", ch(b'U'));
            add("ouch.timestamp", clock(r.accepted.timestamp_ns));
            add("ouch.replacement_order_token", text(r.accepted.token));
            add("ouch.shares", r.accepted.shares.to_string());
            add("ouch.previous_order_token", text(r.previous_token));
        }
        Message::Executed {
            timestamp_ns,
            token,
            executed_shares,
            match_number,
            ..
        } => {
            add("ouch.packet_type", ch(b'E'));
            add("ouch.timestamp", clock(timestamp_ns));
            add("ouch.order_token", text(token));
            add("ouch.executed_shares", executed_shares.to_string());
            add("ouch.match_number", match_number.to_string());
        }
        Message::Canceled {
            timestamp_ns,
            token,
            decrement_shares,
            reason,
        } => {
            add("ouch.packet_type", ch(b'C'));
            add("ouch.timestamp", clock(timestamp_ns));
            add("ouch.order_token", text(token));
            add("ouch.decrement_shares", decrement_shares.to_string());
            add("ouch.cancel_reason", ch(reason));
        }
        Message::Rejected {
            timestamp_ns,
            token,
            reason,
        } => {
            add("ouch.packet_type", ch(b'J'));
            add("ouch.timestamp", clock(timestamp_ns));
            add("ouch.order_token", text(token));
            add("ouch.reject_reason", ch(reason));
        }
        other => panic!("no sample of {other:?} in the capture"),
    }
}

/// What this crate frames and reads of the same segments, per frame number.
fn our_report(frames: &[u32]) -> Report {
    let (mut client, mut host) = (SoupBinFramer::default(), SoupBinFramer::default());
    let mut counters = FramingCounters::default();
    let mut report = Report::new();
    for ((from_client, payload), &frame) in segments().iter().zip(frames) {
        let framer = if *from_client { &mut client } else { &mut host };
        framer.push_at(payload, ByteTimes::at(0), 0, &mut counters, |m| {
            let packet = soupbin::decode(m.bytes).expect("a packet");
            let fields = report.entry(frame).or_default();
            fields_of(&packet, &mut |name, value| {
                fields.entry(name).or_default().push(value)
            });
        });
    }
    assert_eq!(counters.skipped_bytes + counters.bad_body_length, 0);
    report
}

#[test]
fn wiresharks_soupbintcp_and_ouch_dissectors_read_what_we_read() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("fixscope-ouch-tshark.pcap");
    let frames = write_capture(&path);
    let theirs = tshark_report(&path);
    let ours = our_report(&frames);
    let _ = std::fs::remove_file(&path);
    assert_eq!(ours.len(), frames.len() - 1, "the split packet shows once");
    for (frame, mine) in &ours {
        let got = theirs.get(frame).cloned().unwrap_or_default();
        for (name, values) in mine {
            assert_eq!(
                got.get(name),
                Some(values),
                "frame {frame}, {name}: tshark has {got:?}"
            );
        }
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            mine.keys().collect::<Vec<_>>(),
            "frame {frame}: the fields each reads"
        );
    }
    assert_eq!(
        theirs.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "frames with SoupBinTCP packets"
    );
}
