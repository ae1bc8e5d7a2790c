//! A feed against the truth its generator knows. A run of Add Order messages (each's Order
//! Reference Number is its sequence number, so a misnumbered message shows) is cut into
//! packets at random places; some packets are lost, some duplicated, the deliveries
//! shuffled (the first packet stays first: a capture starts somewhere) and a heartbeat
//! may close the run. Whatever the cuts and the order, the tracker must see each
//! delivered message fresh exactly once, count every other copy a duplicate, and end with
//! exactly the runs of undelivered sequence numbers as its open gaps. The A/B arbiter,
//! fed two feeds losing different packets, must pair what both delivered and name what
//! each alone delivered.

use std::collections::{BTreeMap, BTreeSet};

use super::faults::assert_every_count_adds_up;
use super::samples;
use fixscope_itch::encode;
use fixscope_itch::itch50::Message;
use fixscope_itch::moldudp64::{self, Packet, Session};
use fixscope_itch::{AbArbiter, AbEvent, ArbiterConfig, Feed, FeedConfig, FeedTracker};
use proptest::prelude::*;

const SESSION: &[u8] = b"MODEL00001";

/// Packets of messages `first..first + n`, cut at `cuts` (offsets into the run).
fn packets(first: u64, n: u64, cuts: &BTreeSet<u64>) -> Vec<(u64, Vec<u8>)> {
    let mut bounds: Vec<u64> = cuts.iter().copied().filter(|&c| c > 0 && c < n).collect();
    bounds.insert(0, 0);
    bounds.push(n);
    bounds
        .windows(2)
        .map(|w| {
            let msgs: Vec<Vec<u8>> = (w[0]..w[1])
                .map(|i| encode::message(&samples::add_order(first + i)))
                .collect();
            let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
            (
                first + w[0],
                encode::downstream(SESSION, first + w[0], &refs),
            )
        })
        .collect()
}

/// Maximal runs of numbers in `lo..hi` missing from `seen`.
fn missing_runs(lo: u64, hi: u64, seen: &BTreeSet<u64>) -> Vec<(u64, u64)> {
    let mut runs = Vec::new();
    let mut start = None;
    for n in lo..hi {
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
        runs.push((s, hi - 1));
    }
    runs
}

fn count_of(datagram: &[u8]) -> u64 {
    match moldudp64::decode(datagram) {
        Ok(Packet::Downstream(p)) => u64::from(p.header.message_count()),
        _ => 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_feed_cut_and_delivered_any_way_matches_the_truth(
        first in 1u64..1_000_000,
        n in 1u64..120,
        cuts in prop::collection::btree_set(0u64..120, 0..40),
        fate in prop::collection::vec(0u8..10, 120),
        order in prop::collection::vec(any::<u32>(), 240),
        heartbeat in any::<bool>(),
    ) {
        let sent = packets(first, n, &cuts);
        // The first packet always arrives (and first); 0 lost, 1 twice, others once.
        let mut deliveries: Vec<&[u8]> = Vec::new();
        for (i, (_, p)) in sent.iter().enumerate() {
            let copies = if i == 0 { 1 } else { match fate[i] { 0 => 0, 1 => 2, _ => 1 } };
            for _ in 0..copies {
                deliveries.push(p);
            }
        }
        let mut rest: Vec<(u32, &[u8])> =
            deliveries[1..].iter().zip(&order).map(|(p, &k)| (k, *p)).collect();
        rest.sort_by_key(|(k, _)| *k);
        let mut stream = vec![deliveries[0]];
        stream.extend(rest.into_iter().map(|(_, p)| p));
        let hb = encode::heartbeat(SESSION, first + n);
        if heartbeat {
            stream.push(&hb);
        }

        let mut t = FeedTracker::new(FeedConfig { max_open_gaps: 1 << 20, max_sessions: 2 });
        let mut fresh = BTreeMap::new();
        for (i, d) in stream.iter().enumerate() {
            t.on_datagram(d, i as u64 * 1_000, |m| {
                let Ok(Message::AddOrder(a)) = m.message else { panic!("{m:?}") };
                assert_eq!(a.order_reference_number, m.sequence, "numbered by its block");
                assert!(fresh.insert(m.sequence, m.recovered).is_none(), "fresh twice");
            });
        }

        let delivered: BTreeSet<u64> = sent
            .iter()
            .enumerate()
            .filter(|(i, _)| *i == 0 || fate[*i] != 0)
            .flat_map(|(_, (seq, p))| *seq..*seq + count_of(p))
            .collect();
        let total: u64 = stream.iter().map(|d| count_of(d)).sum();
        let c = *t.counters();
        assert_every_count_adds_up(&c);
        prop_assert_eq!(fresh.keys().copied().collect::<BTreeSet<_>>(), delivered.clone());
        prop_assert_eq!(c.moldudp64_messages, total);
        prop_assert_eq!(c.moldudp64_duplicate_messages, total - delivered.len() as u64);
        let hi = if heartbeat { first + n } else { delivered.last().map_or(first, |l| l + 1) };
        let truth = missing_runs(first, hi, &delivered);
        let open: Vec<(u64, u64)> = t.open_gaps().map(|g| (g.first, g.last)).collect();
        prop_assert_eq!(&open, &truth);
        let missing: u64 = truth.iter().map(|(a, b)| b - a + 1).sum();
        prop_assert_eq!(t.missing_messages(), missing);
        prop_assert_eq!(c.moldudp64_gap_messages - c.moldudp64_recovered_messages, missing);
        prop_assert_eq!(
            fresh.values().filter(|&&r| r).count() as u64,
            c.moldudp64_recovered_messages
        );
        prop_assert_eq!(t.next_sequence(&Session::new(SESSION)), Some(hi));
    }

    #[test]
    fn ab_arbitration_pairs_what_both_delivered_and_names_what_one_did(
        n in 1u64..100,
        cuts in prop::collection::btree_set(0u64..100, 0..40),
        loss in prop::collection::vec(0u8..4, 100),
        lag in prop::collection::vec(-500i64..500, 100),
    ) {
        let sent = packets(1, n, &cuts);
        // Packet i leaves at i µs; loss 1: A loses it, 2: B does, 3: both; B's copy
        // arrives `lag` ns after A's would.
        let mut arrivals: Vec<(u64, Feed, &[u8])> = Vec::new();
        let mut truth = (0u64, 0u64, 0u64, BTreeMap::new());
        for (i, (seq, p)) in sent.iter().enumerate() {
            let at = 1_000_000 + i as u64 * 1_000;
            let b_at = (at as i64 + lag[i]) as u64;
            let (on_a, on_b) = (loss[i] != 1 && loss[i] != 3, loss[i] != 2 && loss[i] != 3);
            if on_a { arrivals.push((at, Feed::A, p)); }
            if on_b { arrivals.push((b_at, Feed::B, p)); }
            match (on_a, on_b) {
                (true, true) => { truth.3.insert(*seq, b_at as i64 - at as i64); }
                (true, false) => truth.0 += 1,
                (false, true) => truth.1 += 1,
                _ => truth.2 += 1,
            }
        }
        arrivals.sort_by_key(|(at, feed, _)| (*at, *feed == Feed::B));
        let mut arb = AbArbiter::new(ArbiterConfig {
            window: 1_000,
            ..ArbiterConfig::default()
        });
        let mut pairs = BTreeMap::new();
        let (mut only_a, mut only_b) = (0u64, 0u64);
        let mut on = |e: AbEvent| match e {
            AbEvent::Both { sequence, b_minus_a_ns, .. } => {
                assert!(pairs.insert(sequence, b_minus_a_ns).is_none());
            }
            AbEvent::Only { feed: Feed::A, .. } => only_a += 1,
            AbEvent::Only { feed: Feed::B, .. } => only_b += 1,
        };
        for (at, feed, p) in &arrivals {
            let Ok(Packet::Downstream(d)) = moldudp64::decode(p) else { panic!("decodes") };
            arb.on_header(*feed, &d.header, *at, &mut on);
        }
        arb.flush(&mut on);
        prop_assert_eq!(&pairs, &truth.3);
        prop_assert_eq!((only_a, only_b), (truth.0, truth.1));
        let c = arb.counters();
        prop_assert_eq!(c.ab_first_a + c.ab_first_b + c.ab_same_time, truth.3.len() as u64);
        prop_assert_eq!(c.ab_first_a, truth.3.values().filter(|&&d| d > 0).count() as u64);
        prop_assert_eq!((c.ab_only_a, c.ab_only_b), (truth.0, truth.1));
        prop_assert_eq!(arb.pending(), 0);
    }
}
