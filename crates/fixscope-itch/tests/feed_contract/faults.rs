//! Bad input never panics a decoder or the tracker: random bytes, and valid packets
//! truncated, extended or with a byte changed. Whatever a datagram is, it lands in exactly
//! one of the tracker's packet counts.

use fixscope_itch::encode;
use fixscope_itch::itch50;
use fixscope_itch::moldudp64::{self, Packet, HEADER_LEN};
use fixscope_itch::{FeedTracker, ItchCounters};
use proptest::prelude::*;

/// Every datagram in exactly one packet class, every message in exactly one message class.
pub fn assert_every_count_adds_up(c: &ItchCounters) {
    assert_eq!(
        c.moldudp64_new_packets
            + c.moldudp64_duplicate_packets
            + c.moldudp64_recovered_packets
            + c.moldudp64_heartbeats
            + c.moldudp64_end_of_session
            + c.moldudp64_requests
            + c.moldudp64_undecodable_packets,
        c.moldudp64_packets,
        "{c:?}"
    );
    assert_eq!(
        c.moldudp64_new_messages + c.moldudp64_duplicate_messages + c.moldudp64_recovered_messages,
        c.moldudp64_messages,
        "{c:?}"
    );
    assert_eq!(
        c.itch_messages + c.itch_undecodable_messages + c.itch_unknown_types,
        c.moldudp64_new_messages + c.moldudp64_recovered_messages,
        "{c:?}"
    );
}

fn a_valid_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<u64>(),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..60), 0..6),
    )
        .prop_map(|(seq, blocks)| {
            let refs: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
            encode::downstream(b"FAULTS0001", seq / 2, &refs)
        })
}

/// A decoded packet's messages stay inside the datagram and number as many as its count.
fn check_decoded(datagram: &[u8]) {
    if let Ok(Packet::Downstream(p)) = moldudp64::decode(datagram) {
        let blocks: usize = p.messages().map(|(_, m)| 2 + m.len()).sum();
        assert_eq!(HEADER_LEN + blocks, datagram.len());
        assert_eq!(p.messages().count(), usize::from(p.header.message_count()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check_decoded(&bytes);
        let _ = moldudp64::decode_request(&bytes);
        let _ = itch50::decode(&bytes);
        let mut t = FeedTracker::default();
        t.on_datagram(&bytes, 0, |_| {});
        assert_every_count_adds_up(t.counters());
    }

    #[test]
    fn damaged_packets_never_panic_and_are_counted_once(
        packet in a_valid_packet(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        value in any::<u8>(),
        extra in prop::collection::vec(any::<u8>(), 0..5),
    ) {
        check_decoded(&packet);
        prop_assert!(moldudp64::decode(&packet).is_ok());
        let mut variants = vec![packet[..cut.index(packet.len() + 1)].to_vec()];
        let mut flipped = packet.clone();
        flipped[flip.index(packet.len())] = value;
        variants.push(flipped);
        let mut longer = packet.clone();
        longer.extend_from_slice(&extra);
        variants.push(longer);
        let mut t = FeedTracker::default();
        for (i, v) in variants.iter().enumerate() {
            check_decoded(v);
            t.on_datagram(v, i as u64, |m| {
                // A fresh message is a block of its packet: its decoding never panics.
                let _ = itch50::decode(m.bytes);
            });
        }
        assert_every_count_adds_up(t.counters());
        prop_assert_eq!(t.counters().moldudp64_packets, 3);
    }
}

proptest! {
    #[test]
    fn any_arbiter_input_never_panics_and_every_copy_is_counted_once(
        packets in prop::collection::vec(
            (any::<bool>(), prop::sample::select(vec![0u64, 1, 2, 3, u64::MAX - 1, u64::MAX]),
             0u16..4, any::<u64>()),
            0..60,
        ),
        window in 0u64..5,
    ) {
        let mut arb = fixscope_itch::AbArbiter::new(fixscope_itch::ArbiterConfig {
            window,
            max_pending: 4,
            max_sessions: 1,
        });
        let session = moldudp64::Session::new(b"FAULTS");
        let mut events = 0u64;
        for &(a, seq, count, ts) in &packets {
            let feed = if a { fixscope_itch::Feed::A } else { fixscope_itch::Feed::B };
            arb.on_packet(feed, session, seq, count, ts, |_| events += 1);
        }
        arb.flush(|_| events += 1);
        let c = arb.counters();
        let with_messages = packets.iter().filter(|p| p.2 > 0).count() as u64;
        let pairs = c.ab_first_a + c.ab_first_b + c.ab_same_time;
        prop_assert_eq!(events, pairs + c.ab_only_a + c.ab_only_b);
        prop_assert_eq!(
            2 * pairs + c.ab_only_a + c.ab_only_b + c.ab_same_feed_duplicates + c.ab_late_packets,
            with_messages
        );
    }

    #[test]
    fn any_timestamp_gives_an_answer_near_its_capture_or_none(
        capture in any::<u64>(),
        itch in any::<u64>(),
    ) {
        use fixscope_itch::timestamp;
        if let Some(sent) = timestamp::sender_utc_ns(capture, itch % (2 * timestamp::NS_PER_DAY)) {
            prop_assert!(sent.abs_diff(capture) < 6 * 3_600_000_000_000);
        }
        let _ = timestamp::sender_utc_ns(capture, itch);
    }
}
