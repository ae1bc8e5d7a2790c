//! Bad input never panics and every packet and message lands in exactly one count.

use fixscope_mdp3::{decode, encode, packet, ChannelTracker, Mdp3Counters};
use proptest::prelude::*;

use super::samples;

/// The partitions the counters promise (fixscope_model::counters::mdp3's doc).
pub fn assert_every_count_adds_up(c: &Mdp3Counters) {
    assert_eq!(
        c.mdp3_packets,
        c.mdp3_new_packets
            + c.mdp3_duplicate_packets
            + c.mdp3_recovered_packets
            + c.mdp3_previous_epoch_packets
            + c.mdp3_undecodable_packets,
        "{c:?}"
    );
    assert_eq!(
        c.mdp3_messages,
        c.mdp3_new_messages
            + c.mdp3_duplicate_messages
            + c.mdp3_recovered_messages
            + c.mdp3_previous_epoch_messages,
        "{c:?}"
    );
    assert_eq!(
        c.mdp3_new_messages + c.mdp3_recovered_messages,
        c.mdp3_book_messages
            + c.mdp3_order_book_messages
            + c.mdp3_trade_summary_messages
            + c.mdp3_volume_messages
            + c.mdp3_security_status_messages
            + c.mdp3_channel_resets
            + c.mdp3_heartbeats
            + c.mdp3_instrument_definitions
            + c.mdp3_snapshot_messages
            + c.mdp3_other_messages
            + c.mdp3_undecodable_messages,
        "{c:?}"
    );
}

fn valid_packets() -> Vec<Vec<u8>> {
    vec![
        encode::packet(
            1,
            5,
            &[&samples::book(&[(1, 1), (2, 1)]), &encode::heartbeat()],
        ),
        encode::packet(
            2,
            6,
            &[&encode::trade_summary(1, &[samples::trade_entry(1, 2)])],
        ),
        encode::packet(3, 7, &[&encode::channel_reset(1, 3)]),
        encode::packet(
            4,
            8,
            &[&encode::instrument_definition_future(1, b"ESZ6", b"ES")],
        ),
    ]
}

proptest! {
    #[test]
    fn random_bytes_never_panic(datagrams in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..20)) {
        let mut t = ChannelTracker::default();
        for (i, d) in datagrams.iter().enumerate() {
            if let Ok(p) = packet::parse(d) {
                for m in p.messages() {
                    let _ = decode(m).map(|m| format!("{m:?}"));
                }
            }
            t.on_datagram(d, i as u64, |m| { let _ = format!("{:?}", m.message); });
        }
        assert_every_count_adds_up(t.counters());
    }

    #[test]
    fn damaged_packets_never_panic(flips in prop::collection::vec((0usize..4, any::<prop::sample::Index>(), any::<u8>()), 1..30),
                                   cut in any::<prop::sample::Index>()) {
        let mut t = ChannelTracker::default();
        let packets = valid_packets();
        for (k, (which, at, byte)) in flips.iter().enumerate() {
            let mut d = packets[*which].clone();
            let i = at.index(d.len());
            d[i] = *byte;
            if k % 3 == 0 {
                d.truncate(cut.index(d.len() + 1));
            }
            t.on_datagram(&d, k as u64, |m| {
                if let Ok(m) = m.message {
                    let _ = format!("{m:?}");
                    if let fixscope_mdp3::Message::Book(b) = m { let _ = b.entries.count(); }
                }
            });
        }
        assert_every_count_adds_up(t.counters());
    }
}

#[test]
fn a_datagram_that_is_no_packet_is_counted_and_its_number_shows_as_a_gap() {
    let mut t = ChannelTracker::default();
    t.on_datagram(&encode::packet(1, 10, &[&encode::heartbeat()]), 1, |_| {});
    let mut bad = encode::packet(2, 20, &[&encode::heartbeat()]);
    bad.push(0);
    let o = t.on_datagram(&bad, 2, |_| {});
    assert!(matches!(
        o.class,
        fixscope_mdp3::feed::Class::Undecodable(_)
    ));
    let o = t.on_datagram(&encode::packet(3, 30, &[&encode::heartbeat()]), 3, |_| {});
    assert_eq!(o.gap.map(|g| (g.first, g.last)), Some((2, 2)));
    let c = t.counters();
    assert_eq!(
        (c.mdp3_undecodable_packets, c.mdp3_gaps, c.mdp3_heartbeats),
        (1, 1, 2)
    );
    assert_every_count_adds_up(c);
}
