//! `fixscope pcap --md A,B=itch50`: an A/B pair of Nasdaq ITCH 5.0 feeds over MoldUDP64,
//! their health and arbitration against the script's own truth.
//!
//! The script sends one stream of packets (1 to 3 System Event messages each, numbered by
//! MoldUDP64 from 1) on both feeds: A's copy at the packet's time, B's LAG_NS later —
//! except every tenth packet, which B carries LEAD_NS before A. A loses packets the truth
//! names, B others; A gets one packet twice (a duplicate) and one it lost late (a
//! retransmission: recovered); then the session changes (an epoch, never a gap). Every
//! count the summary gives follows from that, and is checked in text and JSON.

mod support;

use std::collections::BTreeSet;

use fixscope_itch::encode;
use fixscope_itch::itch50::Message;
use support::*;

const A: [u8; 4] = [233, 54, 12, 1];
const B: [u8; 4] = [233, 54, 12, 2];
const PORT: u16 = 26_400;
const PACKETS: u64 = 200;
const LAG_NS: u64 = 1_500;
const LEAD_NS: u64 = 700;

/// What the script sent and lost.
struct Truth {
    /// Per packet (index 0..PACKETS): its first sequence number and message count.
    packets: Vec<(u64, u16)>,
    lost_a: BTreeSet<u64>,
    lost_b: BTreeSet<u64>,
    /// The packet A gets twice, and the one it lost and gets late.
    duplicate_a: u64,
    recovered_a: u64,
    frames: Vec<(u64, Vec<u8>)>,
}

fn script() -> Truth {
    let t0 = 1_719_840_600_000_000_000u64;
    let session = b"SESSION001";
    let lost_a: BTreeSet<u64> = [10, 50, 51, 52, 120].into();
    let lost_b: BTreeSet<u64> = [20, 100, 101].into();
    let (duplicate_a, recovered_a) = (5, 120);
    let mut packets = Vec::new();
    let mut frames = Vec::new();
    let mut seq = 1u64;
    let mut bodies = Vec::new();
    for i in 0..PACKETS {
        let count = (i % 3 + 1) as u16;
        let messages: Vec<Vec<u8>> = (0..count)
            .map(|k| {
                encode::message(&Message::SystemEvent {
                    header: encode::itch_header_of(
                        b'S',
                        0,
                        34_200_000_000_000 + i * 10 + u64::from(k),
                    ),
                    event_code: b'Q',
                })
            })
            .collect();
        let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        let body = encode::downstream(session, seq, &refs);
        packets.push((seq, count));
        let t = t0 + i * 100_000;
        let b_first = i % 10 == 9;
        let (ta, tb) = if b_first {
            (t + LEAD_NS, t)
        } else {
            (t, t + LAG_NS)
        };
        if !lost_a.contains(&i) {
            frames.push((ta, udp_frame(A, PORT, &body)));
        }
        if !lost_b.contains(&i) {
            frames.push((tb, udp_frame(B, PORT, &body)));
        }
        if i == duplicate_a {
            frames.push((ta + 10_000, udp_frame(A, PORT, &body)));
        }
        bodies.push(body);
        seq += u64::from(count);
    }
    // A's lost packet comes late (a retransmission): recovered, not new.
    let late = t0 + PACKETS * 100_000;
    frames.push((late, udp_frame(A, PORT, &bodies[recovered_a as usize])));
    // A new session on both: an epoch, never a gap (its numbering starts anew).
    let next = encode::downstream(
        b"SESSION002",
        1,
        &[&encode::message(&Message::SystemEvent {
            header: encode::itch_header_of(b'S', 0, 34_300_000_000_000),
            event_code: b'O',
        })],
    );
    frames.push((late + 1_000_000, udp_frame(A, PORT, &next)));
    frames.push((late + 1_001_000, udp_frame(B, PORT, &next)));
    frames.sort_by_key(|(ts, _)| *ts);
    Truth {
        packets,
        lost_a,
        lost_b,
        duplicate_a,
        recovered_a,
        frames,
    }
}

fn write(path: &std::path::Path, truth: &Truth) {
    write_frames(path, &truth.frames);
}

#[test]
fn an_ab_pair_s_gaps_duplicates_and_leads_are_the_script_s() {
    let dir = tempfile::tempdir().unwrap();
    let truth = script();
    let path = dir.path().join("md.pcap");
    write(&path, &truth);
    let md = format!("233.54.12.1:{PORT},233.54.12.2:{PORT}=itch50");
    // `-p`: the order port (none here: this capture is market data alone).
    let (_, s) = analyse(&[&path], &["--md", &md]);
    let feeds = s["feeds"].as_array().expect("feeds");
    assert_eq!(feeds.len(), 1, "{feeds:?}");
    let f = &feeds[0];
    assert_eq!(f["protocol"], "itch50");
    let (a, b) = (&f["legs"][0], &f["legs"][1]);
    let messages = |set: &BTreeSet<u64>| -> u64 {
        set.iter()
            .map(|&i| u64::from(truth.packets[i as usize].1))
            .sum()
    };
    let all: u64 = truth.packets.iter().map(|p| u64::from(p.1)).sum();
    // A: every packet but its lost ones, one twice, the late one recovered, the epoch's.
    let lost_a_for_good: BTreeSet<u64> = truth
        .lost_a
        .iter()
        .copied()
        .filter(|&i| i != truth.recovered_a)
        .collect();
    assert_eq!(a["packets"], PACKETS - 5 + 1 + 1 + 1, "{a}");
    assert_eq!(a["duplicate_packets"], 1, "{a}");
    assert_eq!(a["recovered_packets"], 1, "{a}");
    // Gaps: 10, 50..=52 and 120 (later filled) — three runs seen.
    assert_eq!(a["gaps"], 3, "{a}");
    assert_eq!(a["lost"], messages(&truth.lost_a), "{a}");
    let open: Vec<(u64, u64)> = a["open_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["first"].as_u64().unwrap(), g["last"].as_u64().unwrap()))
        .collect();
    let want: Vec<(u64, u64)> = [10u64, 50]
        .iter()
        .map(|&i| {
            let last = if i == 50 { 52 } else { i };
            let (first, _) = truth.packets[i as usize];
            let (l, c) = truth.packets[last as usize];
            (first, l + u64::from(c) - 1)
        })
        .collect();
    assert_eq!(open, want, "{a}");
    assert_eq!(
        a["counters"]["moldudp64_session_changes"], 1,
        "a new session is an epoch: {a}"
    );
    // B: its lost packets 20 and 100..=101, two runs.
    assert_eq!(b["packets"], PACKETS - 3 + 1, "{b}");
    assert_eq!(b["gaps"], 2, "{b}");
    assert_eq!(b["lost"], messages(&truth.lost_b), "{b}");
    assert_eq!(b["duplicate_packets"], 0);
    // Messages: every copy's (A's duplicate counts).
    let dup = u64::from(truth.packets[truth.duplicate_a as usize].1);
    let a_messages = all - messages(&lost_a_for_good) - messages(&[truth.recovered_a].into());
    assert_eq!(
        a["messages"],
        a_messages + dup + u64::from(truth.packets[120].1) + 1,
        "{a}"
    );
    // Arbitration: on both = every packet neither lost (and the epoch's); A first but for
    // every tenth, by exactly its lag; only on A what B lost and only on B what A lost.
    let arb = &f["arbitration"];
    let both: Vec<u64> = (0..PACKETS)
        .filter(|i| !truth.lost_b.contains(i) && !lost_a_for_good.contains(i))
        .collect();
    // B first: every tenth packet by LEAD_NS, and the one A got late, by all its delay.
    let b_first = both.iter().filter(|&&i| i % 10 == 9).count() as u64 + 1;
    assert_eq!(arb["b_first"]["count"], b_first, "{arb}");
    // A first: the rest, and the new session's packet (by 1 us).
    assert_eq!(
        arb["a_first"]["count"],
        both.len() as u64 - b_first + 1,
        "{arb}"
    );
    assert_eq!(arb["a_first"]["p50_ns"], LAG_NS, "{arb}");
    assert_eq!(arb["a_first"]["min_ns"], 1_000, "{arb}");
    assert_eq!(arb["b_first"]["min_ns"], LEAD_NS, "{arb}");
    let late_by = PACKETS * 100_000 - (truth.recovered_a * 100_000 + LAG_NS);
    let max = arb["b_first"]["max_ns"].as_u64().unwrap();
    // HDR precision (3 significant digits) on a value of ~8 ms.
    assert!(
        max.abs_diff(late_by) <= late_by / 1000,
        "{max} vs {late_by}: {arb}"
    );
    assert_eq!(arb["only_a"], truth.lost_b.len() as u64, "{arb}");
    assert_eq!(arb["only_b"], lost_a_for_good.len() as u64, "{arb}");
    // A's delay against its first message's timestamp, above its fastest packet: each
    // new packet of the first session (not the duplicate, not the late recovery) was
    // captured i * 100 us after the first and stamped i * 10 ns later (B-first packets
    // LEAD_NS later still); the next session's packet is a day's offset away: apart.
    let mut above: Vec<u64> = (0..PACKETS)
        .filter(|i| !truth.lost_a.contains(i))
        .map(|i| i * 100_000 - i * 10 + if i % 10 == 9 { LEAD_NS } else { 0 })
        .collect();
    above.sort_unstable();
    let d = &a["delay"];
    assert_eq!(d["sender_clock"], "timestamp", "{d}");
    assert_eq!(d["packets"], above.len() as u64, "{d}");
    assert_eq!(d["out_of_range"], 1, "{d}");
    let rank = |q: f64| above[((q * above.len() as f64).ceil() as usize).max(1) - 1];
    assert_eq!(d["above_min_p50_ns"], rank(0.5), "{d}");
    assert_eq!(d["above_min_p99_ns"], rank(0.99), "{d}");
    assert_eq!(d["above_min_max_ns"], *above.last().unwrap(), "{d}");
    assert!(
        d["raw_min_ns"].is_null(),
        "ITCH's timestamps are the venue's local time: {d}"
    );
    // The text summary says the same.
    let out = fixscope(&["pcap", path.to_str().unwrap(), "-p", "9878", "--md", &md]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("market data feeds:"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "only on A {}, only on B {}",
            truth.lost_b.len(),
            lost_a_for_good.len()
        )),
        "{text}"
    );
}

#[test]
fn md_is_refused_with_a_reason_on_stdin_and_for_overlapping_feeds() {
    let out = fixscope(&["pcap", "-", "-p", "9878", "--md", "26400=itch50"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not stdin"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pcap");
    write(&path, &script());
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        "9878",
        "--md",
        "26400=itch50",
        "--md",
        "233.54.12.1:26400=itch50",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("same datagrams"));
    let out = fixscope(&[
        "pcap",
        path.to_str().unwrap(),
        "-p",
        "9878",
        "--md",
        "26400=pitch",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("itch50, mdp3"));
}
