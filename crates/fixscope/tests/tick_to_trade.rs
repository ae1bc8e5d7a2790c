//! `fixscope pcap --md A,B=itch50 --tick-link key:1:8`: tick-to-trade against the script's
//! own truth.
//!
//! An ITCH 5.0 A/B pair over MoldUDP64 (two messages a packet; B after A by LAG_NS, but
//! every fifth packet B first by LEAD_NS; A loses some packets, B carries them) and a FIX
//! client whose trading application answers some of the packets: each NewOrderSingle
//! leaves REACT_NS(i) after the packet's first copy on the wire, its ClOrdID `T` + the
//! sequence number of the packet's second message (8 digits), and the venue acks it
//! ACK_NS later. So each such order's `tick_to_order` is its REACT_NS(i) and its
//! `tick_to_ack` REACT_NS(i) + ACK_NS, exactly. Then the orders the rule must not link: one
//! naming a number the feed never carried, one whose ClOrdID holds no number, one sent
//! before the packet it names arrived, and one naming a number the feed's next session
//! (an epoch) carried again — each counted in its own `ticks_*` count, never measured.

mod support;

use fixscope_core::decode::LinkType;
use fixscope_core::pcap_writer::{FrameOptions, SyntheticConnection};
use fixscope_itch::encode;
use fixscope_itch::itch50::Message;
use fixscope_testkit::fix::fix_message;
use support::*;

const A: [u8; 4] = [233, 54, 12, 1];
const B: [u8; 4] = [233, 54, 12, 2];
const MD_PORT: u16 = 26_400;
const PACKETS: u64 = 60;
const LAG_NS: u64 = 1_500;
const LEAD_NS: u64 = 700;
const ACK_NS: u64 = 41_000;

/// The application's reaction to packet `i`: distinct per order.
fn react_ns(i: u64) -> u64 {
    9_000 + i * 137
}

/// A packet of `count` System Events numbered from `seq` in `session`.
fn packet(session: &[u8; 10], seq: u64, count: u64, ts: u64) -> Vec<u8> {
    let messages: Vec<Vec<u8>> = (0..count)
        .map(|k| {
            encode::message(&Message::SystemEvent {
                header: encode::itch_header_of(b'S', 0, ts % 86_400_000_000_000 + k),
                event_code: b'Q',
            })
        })
        .collect();
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    encode::downstream(session, seq, &refs)
}

fn order(cl_ord_id: &str) -> Vec<u8> {
    fix_message(
        "FIX.4.4",
        &[
            (35, "D"),
            (49, "CLIENT"),
            (56, "VENUE"),
            (11, cl_ord_id),
            (55, "AAPL"),
            (54, "1"),
            (38, "100"),
        ],
    )
}

fn ack(cl_ord_id: &str) -> Vec<u8> {
    fix_message(
        "FIX.4.4",
        &[
            (35, "8"),
            (49, "VENUE"),
            (56, "CLIENT"),
            (11, cl_ord_id),
            (150, "0"),
            (39, "0"),
        ],
    )
}

/// Timed frames of a capture.
type Frames = Vec<(u64, Vec<u8>)>;

/// The capture's frames, and each linked order's (tick_to_order, tick_to_ack).
fn script() -> (Frames, Vec<(u64, u64)>) {
    let t0 = 1_719_840_600_000_000_000u64;
    let mut frames = Vec::new();
    let mut fix = Vec::new();
    let mut conn =
        SyntheticConnection::new(endpoint(false, 2, 40_000), endpoint(false, 1, SERVER_PORT));
    fix.extend(conn.handshake().into_iter().map(|p| at(t0, p)));
    let mut truth = Vec::new();
    let lost_a = [7u64, 30, 31];
    let order_at =
        |fix: &mut Vec<TimedPacket>, conn: &mut SyntheticConnection, id: &str, t: u64| {
            fix.push(at(t, conn.client_sends(&order(id))));
            fix.push(at(t + ACK_NS, conn.server_sends(&ack(id))));
        };
    for i in 0..PACKETS {
        let seq = 1 + 2 * i;
        let t = t0 + 1_000_000 + i * 200_000;
        let body = packet(b"SESSION001", seq, 2, t);
        let (ta, tb) = if i % 5 == 4 {
            (t + LEAD_NS, t)
        } else {
            (t, t + LAG_NS)
        };
        if !lost_a.contains(&i) {
            frames.push((ta, udp_frame(A, MD_PORT, &body)));
        }
        frames.push((tb, udp_frame(B, MD_PORT, &body)));
        if i % 2 == 0 {
            let first = if lost_a.contains(&i) { tb } else { ta.min(tb) };
            let sent = first + react_ns(i);
            order_at(&mut fix, &mut conn, &format!("T{:08}", seq + 1), sent);
            truth.push((react_ns(i), react_ns(i) + ACK_NS));
        }
    }
    let late = t0 + 1_000_000 + PACKETS * 200_000;
    // A number the feed never carried; no number at all.
    order_at(&mut fix, &mut conn, "T00099999", late);
    order_at(&mut fix, &mut conn, "TXXXXXXXX", late + 100_000);
    // Sent before the packet it names: the packet comes after.
    let next = 1 + 2 * PACKETS;
    order_at(&mut fix, &mut conn, &format!("T{next:08}"), late + 200_000);
    let body = packet(b"SESSION001", next, 1, late + 300_000);
    frames.push((late + 300_000, udp_frame(A, MD_PORT, &body)));
    frames.push((late + 301_000, udp_frame(B, MD_PORT, &body)));
    // The next session numbers from 1 again: number 2 is then carried twice.
    let body = packet(b"SESSION002", 1, 2, late + 400_000);
    frames.push((late + 400_000, udp_frame(A, MD_PORT, &body)));
    frames.push((late + 400_500, udp_frame(B, MD_PORT, &body)));
    order_at(&mut fix, &mut conn, "T00000002-b", late + 500_000);
    for p in &fix {
        frames.push((
            p.ts_ns,
            p.spec.frame(LinkType::Ethernet, &FrameOptions::default()),
        ));
    }
    frames.sort_by_key(|(ts, _)| *ts);
    (frames, truth)
}

#[test]
fn each_order_is_timed_from_the_first_copy_of_the_packet_its_id_names() {
    let dir = tempfile::tempdir().unwrap();
    let (frames, truth) = script();
    let path = dir.path().join("ticks.pcap");
    write_frames(&path, &frames);
    let md = "233.54.12.1:26400,233.54.12.2:26400=itch50";
    let port = SERVER_PORT.to_string();
    for threads in [None, Some("1"), Some("4")] {
        let mut flags = vec!["-p", &port, "--md", md, "--tick-link", "key:1:8"];
        if let Some(n) = threads {
            flags.extend(["--threads", n]);
        }
        let (_, s) = analyse(&[&path], &flags);
        let c = |name: &str| counter(&s, name);
        let linked = truth.len() as u64;
        assert_eq!(
            c("ticks_orders"),
            linked + 4,
            "{threads:?}: {}",
            s["counters"]
        );
        assert_eq!(c("ticks_linked"), linked, "{}", s["counters"]);
        assert_eq!(c("ticks_not_in_feed"), 1, "{}", s["counters"]);
        assert_eq!(c("ticks_no_sequence"), 1, "{}", s["counters"]);
        assert_eq!(c("ticks_after_order"), 1, "{}", s["counters"]);
        assert_eq!(c("ticks_ambiguous"), 1, "{}", s["counters"]);
        let to_order: Vec<u64> = truth.iter().map(|t| t.0).collect();
        let to_ack: Vec<u64> = truth.iter().map(|t| t.1).collect();
        assert_stage(&s, "tick_to_order", &to_order);
        assert_stage(&s, "tick_to_ack", &to_ack);
        assert_eq!(c("matched"), linked + 4);
    }
    // The text summary shows the stages.
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        &port,
        "--md",
        md,
        "--tick-link",
        "key:1:8",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tick_to_order"), "{text}");
    assert!(text.contains("tick_to_ack"), "{text}");
}

#[test]
fn a_link_to_no_feed_or_one_of_several_unnamed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (frames, _) = script();
    let path = dir.path().join("t.pcap");
    write_frames(&path, &frames);
    let p = path.to_str().unwrap();
    let port = SERVER_PORT.to_string();
    let out = fixscope(&["pcap", p, "-p", &port, "--tick-link", "key"]);
    assert!(!out.status.success(), "--tick-link needs --md");
    let two = [
        "pcap",
        p,
        "-p",
        &port,
        "--md",
        "233.54.12.1:26400=itch50",
        "--md",
        "233.54.12.2:26400=itch50",
        "--tick-link",
        "key:1:8",
    ];
    let out = fixscope(&two);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("several --md feeds"),
        "{err}"
    );
    let mut named = two.to_vec();
    named[9] = "key:1:8@233.54.12.2:26400";
    let out = fixscope(&named);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fixscope(&[
        "pcap",
        p,
        "-p",
        &port,
        "--md",
        "26400=itch50",
        "--tick-link",
        "tag:9717",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("key[:START[:LEN]]"),
        "{err}"
    );
}

/// The README's tick-to-trade example, on the capture of this script committed beside the
/// simulator's: the capture is this script's (`FIXSCOPE_GOLDEN_BLESS=1` writes it again),
/// and the stage lines the README shows are what the command prints.
#[test]
fn the_readme_tick_to_trade_example_runs_as_written() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let committed = root.join("testdata/md/ticks.pcap");
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("ticks.pcap");
    write_frames(&fresh, &script().0);
    let bytes = std::fs::read(&fresh).unwrap();
    if std::env::var("FIXSCOPE_GOLDEN_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(committed.parent().unwrap()).unwrap();
        std::fs::write(&committed, &bytes).unwrap();
    }
    assert!(
        std::fs::read(&committed).is_ok_and(|c| c == bytes),
        "{} is not this script's capture (bless: FIXSCOPE_GOLDEN_BLESS=1)",
        committed.display()
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = readme
        .lines()
        .find(|l| l.starts_with("fixscope pcap testdata/md/ticks.pcap"))
        .expect("README runs fixscope pcap on testdata/md/ticks.pcap");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fixscope"))
        .args(&args)
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let shown: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("tick_to_order ") || l.starts_with("tick_to_ack "))
        .collect();
    assert_eq!(shown.len(), 2, "README shows both tick stages' lines");
    for line in shown {
        assert!(
            text.lines().any(|l| l == line),
            "README's {line:?} not in:\n{text}"
        );
    }
}
