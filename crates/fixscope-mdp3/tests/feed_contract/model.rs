//! A channel against the truth its generator knows. Packets numbered from `first`, each
//! carrying book entries for a few instruments with consecutive RptSeqs per instrument,
//! are sent on A and B; each copy may be lost, and the merged deliveries are reordered
//! by random adjacent swaps (the first stays first: a capture starts somewhere). Fed to
//! one tracker, every delivered packet must be fresh exactly once, every other copy a
//! duplicate, the open gaps exactly the runs of undelivered numbers, and each
//! instrument's open RptSeq gaps exactly the runs of its updates only undelivered
//! packets carried. The arbiter, fed the same, must pair what both feeds delivered and
//! name what each alone delivered.

use std::collections::{BTreeMap, BTreeSet};

use fixscope_mdp3::{encode, AbArbiter, AbEvent, ArbiterConfig, ChannelTracker, Feed};
use proptest::prelude::*;

use super::faults::assert_every_count_adds_up;
use super::samples;

/// Maximal runs of numbers in `lo..=hi` missing from `seen`.
fn missing_runs(lo: u32, hi: u32, seen: &BTreeSet<u32>) -> Vec<(u32, u32)> {
    let mut runs = Vec::new();
    let mut start = None;
    for n in lo..=hi {
        match (seen.contains(&n), start) {
            (false, None) => start = Some(n),
            (true, Some(s)) => {
                runs.push((s, n - 1));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, hi));
    }
    runs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn a_channel_with_loss_duplicates_and_reordering_yields_the_truths_gaps(
        first in 1u32..1000,
        instruments in prop::collection::vec(prop::collection::vec(0i32..6, 1..4), 2..60),
        lost in prop::collection::vec((any::<bool>(), any::<bool>()), 60),
        swaps in prop::collection::vec(1usize..200, 0..40),
    ) {
        // The truth: each packet's entries (SecurityID, RptSeq).
        let mut rpt: BTreeMap<i32, u32> = BTreeMap::new();
        let mut truth = Vec::new();
        for (i, sids) in instruments.iter().enumerate() {
            let entries: Vec<(i32, u32)> = sids.iter().map(|&s| {
                let r = rpt.entry(s).or_insert(100);
                *r += 1;
                (s, *r)
            }).collect();
            truth.push((first + i as u32, entries));
        }
        let mut deliveries = Vec::new();
        for (i, (seq, entries)) in truth.iter().enumerate() {
            let (lose_a, lose_b) = if i == 0 { (false, true) } else { lost[i] };
            let d = encode::packet(*seq, 1_000_000 + u64::from(*seq), &[&samples::book(entries)]);
            if !lose_a { deliveries.push((Feed::A, *seq, d.clone())); }
            if !lose_b { deliveries.push((Feed::B, *seq, d)); }
        }
        for s in swaps {
            if s + 1 < deliveries.len() { deliveries.swap(s, s + 1); }
        }
        let mut t = ChannelTracker::default();
        let mut arb = AbArbiter::new(ArbiterConfig { window: 1000, max_pending: 1000 });
        let mut events = Vec::new();
        let mut fresh = Vec::new();
        for (i, (feed, seq, d)) in deliveries.iter().enumerate() {
            t.on_datagram(d, i as u64 * 100, |m| fresh.push(m.msg_seq_num));
            arb.on_packet(*feed, *seq, Some(1_000_000 + u64::from(*seq)), i as u64 * 100, |e| events.push(e));
        }
        arb.flush(|e| events.push(e));
        let delivered: BTreeSet<u32> = deliveries.iter().map(|d| d.1).collect();
        let hi = *delivered.iter().next_back().unwrap();
        // Packets.
        let mut fresh_set: Vec<u32> = fresh.clone();
        fresh_set.sort();
        prop_assert_eq!(fresh_set, delivered.iter().copied().collect::<Vec<_>>());
        let c = *t.counters();
        assert_every_count_adds_up(&c);
        prop_assert_eq!(c.mdp3_new_packets + c.mdp3_recovered_packets, delivered.len() as u64);
        prop_assert_eq!(c.mdp3_duplicate_packets, (deliveries.len() - delivered.len()) as u64);
        let gaps: Vec<(u32, u32)> = t.open_gaps().map(|g| (g.first, g.last)).collect();
        let want = missing_runs(first, hi, &delivered);
        prop_assert_eq!(&gaps, &want);
        prop_assert_eq!(c.mdp3_gap_packets - c.mdp3_recovered_packets, t.missing_packets());
        // Instruments.
        let mut seen: BTreeMap<i32, BTreeSet<u32>> = BTreeMap::new();
        for (seq, entries) in &truth {
            if delivered.contains(seq) {
                for &(s, r) in entries { seen.entry(s).or_default().insert(r); }
            }
        }
        for sid in 0..6 {
            let want = seen.get(&sid).map_or(Vec::new(), |s| {
                missing_runs(*s.first().unwrap(), *s.last().unwrap(), s)
            });
            prop_assert_eq!(t.instrument_gaps(sid), want, "instrument {}", sid);
        }
        prop_assert_eq!(c.mdp3_rptseq_duplicate_updates, 0);
        // Arbitration.
        let on = |f: Feed| deliveries.iter().filter(|d| d.0 == f).map(|d| d.1).collect::<BTreeSet<u32>>();
        let (a, b) = (on(Feed::A), on(Feed::B));
        let mut both = BTreeSet::new();
        let mut only_a = BTreeSet::new();
        let mut only_b = BTreeSet::new();
        for e in &events {
            match *e {
                AbEvent::Both { msg_seq_num, .. } => { both.insert(msg_seq_num); }
                AbEvent::Only { feed: Feed::A, msg_seq_num, .. } => { only_a.insert(msg_seq_num); }
                AbEvent::Only { feed: Feed::B, msg_seq_num, .. } => { only_b.insert(msg_seq_num); }
            }
        }
        prop_assert_eq!(both, a.intersection(&b).copied().collect::<BTreeSet<_>>());
        prop_assert_eq!(only_a, a.difference(&b).copied().collect::<BTreeSet<_>>());
        prop_assert_eq!(only_b, b.difference(&a).copied().collect::<BTreeSet<_>>());
        prop_assert_eq!(events.len(), delivered.len());
    }
}
