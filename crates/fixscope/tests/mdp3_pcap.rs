//! `fixscope pcap --md A,B=mdp3`: an A/B pair of a CME MDP 3.0 incremental channel, its
//! health and arbitration against the script's own truth.
//!
//! The script sends one stream of packets (MsgSeqNum from 1, each one book update of one
//! instrument, its RptSeq counting on) on both feeds: A's copy at the packet's time, B's
//! LAG_NS later — except every fifth packet, which B carries LEAD_NS before A. A loses
//! some packets, B others; B gets one twice. MDP 3.0 numbers packets, so gaps are counted
//! in packets, and a packet one feed lost is covered by the other.

mod support;

use std::collections::BTreeSet;

use fixscope_mdp3::encode;
use fixscope_mdp3::messages::BookEntry;
use support::*;

const A: [u8; 4] = [224, 0, 31, 1];
const B: [u8; 4] = [224, 0, 32, 1];
const PORT: u16 = 14_310;
const PACKETS: u32 = 300;
const LAG_NS: u64 = 900;
const LEAD_NS: u64 = 400;

fn packet(seq: u32, sent_ns: u64) -> Vec<u8> {
    let entry = BookEntry {
        md_entry_px: Some(4_512_250_000_000),
        md_entry_size: Some(5),
        security_id: 42,
        rpt_seq: seq,
        number_of_orders: Some(1),
        md_price_level: 1,
        md_update_action: 1,
        md_entry_type: b'0',
    };
    encode::packet(seq, sent_ns, &[&encode::book(sent_ns, &[entry])])
}

#[test]
fn an_mdp3_pair_s_gaps_duplicates_and_leads_are_the_script_s() {
    let t0 = 1_733_011_200_000_000_000u64;
    let lost_a: BTreeSet<u32> = [7, 30, 31, 32].into();
    let lost_b: BTreeSet<u32> = [15].into();
    let twice_b = 100;
    let mut frames = Vec::new();
    for seq in 1..=PACKETS {
        let t = t0 + u64::from(seq) * 50_000;
        let body = packet(seq, t - 20_000);
        let (ta, tb) = if seq % 5 == 0 {
            (t + LEAD_NS, t)
        } else {
            (t, t + LAG_NS)
        };
        if !lost_a.contains(&seq) {
            frames.push((ta, udp_frame(A, PORT, &body)));
        }
        if !lost_b.contains(&seq) {
            frames.push((tb, udp_frame(B, PORT, &body)));
        }
        if seq == twice_b {
            frames.push((tb + 5_000, udp_frame(B, PORT, &body)));
        }
    }
    frames.sort_by_key(|(ts, _)| *ts);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mdp3.pcap");
    write_frames(&path, &frames);
    let md = format!("224.0.31.1:{PORT},224.0.32.1:{PORT}=mdp3");
    let (_, s) = analyse(&[&path], &["--md", &md]);
    let f = &s["feeds"][0];
    assert_eq!(f["protocol"], "mdp3", "{s}");
    let (a, b) = (&f["legs"][0], &f["legs"][1]);
    assert_eq!(a["packets"], u64::from(PACKETS) - 4, "{a}");
    assert_eq!(a["gaps"], 2, "{a}");
    assert_eq!(
        (&a["lost"], &a["lost_unit"]),
        (&4.into(), &"packets".into()),
        "{a}"
    );
    assert_eq!(a["open_gaps"][1]["first"], 30);
    assert_eq!(a["open_gaps"][1]["last"], 32);
    assert_eq!(a["counters"]["mdp3_rptseq_gap_updates"], 4, "{a}");
    assert_eq!(b["packets"], u64::from(PACKETS) - 1 + 1, "{b}");
    assert_eq!(b["gaps"], 1);
    assert_eq!(b["duplicate_packets"], 1, "{b}");
    let arb = &f["arbitration"];
    let both: Vec<u32> = (1..=PACKETS)
        .filter(|s| !lost_a.contains(s) && !lost_b.contains(s))
        .collect();
    let b_first = both.iter().filter(|&&s| s % 5 == 0).count() as u64;
    assert_eq!(arb["b_first"]["count"], b_first, "{arb}");
    assert_eq!(arb["b_first"]["max_ns"], LEAD_NS, "{arb}");
    assert_eq!(
        arb["a_first"]["count"],
        both.len() as u64 - b_first,
        "{arb}"
    );
    assert_eq!(arb["a_first"]["min_ns"], LAG_NS, "{arb}");
    assert_eq!(arb["a_first"]["max_ns"], LAG_NS, "{arb}");
    assert_eq!(arb["only_a"], lost_b.len() as u64, "{arb}");
    assert_eq!(arb["only_b"], lost_a.len() as u64, "{arb}");
    // Delay against SendingTime (each packet stamped 20 us before its time): A's copies
    // 20 us after it, or 20.4 us when B led; B's 20.9 us, or 20 us when it led. B's
    // second copy is no new packet.
    for (leg, packets, max) in [
        (a, u64::from(PACKETS) - 4, 20_000 + LEAD_NS),
        (b, u64::from(PACKETS) - 1, 20_000 + LAG_NS),
    ] {
        let d = &leg["delay"];
        assert_eq!(d["sender_clock"], "SendingTime", "{d}");
        assert_eq!(d["packets"], packets, "{d}");
        assert_eq!(
            (&d["raw_min_ns"], &d["raw_max_ns"]),
            (&20_000.into(), &max.into()),
            "{d}"
        );
        assert_eq!(d["above_min_max_ns"], max - 20_000, "{d}");
        assert_eq!(d["out_of_range"], 0, "{d}");
    }
}
