//! Target `moldudp64_itch`: a redundant feed pair's capture (a
//! [`crate::script::datagrams`] script: datagrams of feed A or B, capture time stepping)
//! read as MoldUDP64, every block as ITCH 5.0, each feed tracked by its own
//! `FeedTracker` (with a small gap and session bound, so forgetting is reached), every
//! decoded downstream packet arbitrated by one `AbArbiter` (a small window and bound),
//! Stock Locates mapped per feed.
//! The oracle: a decoded packet's blocks fill the datagram and number its count; every
//! datagram lands in exactly one packet class and every message in exactly one message
//! class (the partitions `fixscope_model::counters::itch` documents); the fresh messages
//! handed out are exactly the new and recovered ones, each a block of its datagram
//! numbered inside its packet; a repeat of a feed's last datagram has nothing fresh; the
//! arbiter accounts for every copy once.

use fixscope_itch::itch50::{self, Message};
use fixscope_itch::moldudp64::{self, Packet, HEADER_LEN};
use fixscope_itch::{
    timestamp, AbArbiter, ArbiterConfig, Feed, FeedConfig, FeedTracker, ItchCounters, LocateMap,
};

use crate::script::datagrams;

/// Every datagram in exactly one packet class, every message in exactly one message class.
fn assert_every_count_adds_up(c: &ItchCounters) {
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
    assert!(c.moldudp64_gaps <= c.moldudp64_gap_messages);
    assert!(c.moldudp64_gaps_forgotten <= c.moldudp64_gaps);
    assert!(c.moldudp64_peak_messages_per_ms <= c.moldudp64_messages);
}

/// The datagram's own reading, checked against its bytes; its message count if downstream.
fn check_decoded(datagram: &[u8]) -> Option<u64> {
    let Ok(Packet::Downstream(p)) = moldudp64::decode(datagram) else {
        return None;
    };
    let blocks: usize = p.messages().map(|(_, m)| 2 + m.len()).sum();
    assert_eq!(
        HEADER_LEN + blocks,
        datagram.len(),
        "blocks fill the datagram"
    );
    assert_eq!(p.messages().count(), usize::from(p.header.message_count()));
    for (i, (seq, _)) in p.messages().enumerate() {
        assert_eq!(seq, p.header.sequence + i as u64);
    }
    Some(u64::from(p.header.message_count()))
}

pub fn moldudp64_itch(data: &[u8]) {
    run(data);
}

/// The target; returns what each feed and the arbiter counted.
fn run(data: &[u8]) -> ([ItchCounters; 2], ItchCounters) {
    let config = FeedConfig {
        max_open_gaps: 4,
        max_sessions: 2,
    };
    let mut feeds = [FeedTracker::new(config), FeedTracker::new(config)];
    let mut locates = [LocateMap::new(), LocateMap::new()];
    let mut arb = AbArbiter::new(ArbiterConfig {
        window: 3,
        max_pending: 8,
        max_sessions: 2,
    });
    let mut events = 0u64;
    let mut arbitrated = 0u64;
    let mut fresh_seen = [0u64; 2];
    let mut last: [&[u8]; 2] = [&[], &[]];
    for g in datagrams(data) {
        let f = g.feed;
        let messages = check_decoded(g.bytes);
        let range = g.bytes.as_ptr_range();
        let mut fresh = 0u64;
        let locate = &mut locates[f];
        let out = feeds[f].on_datagram(g.bytes, g.capture_ns, |m| {
            assert!(
                range.contains(&m.bytes.as_ptr()) || m.bytes.is_empty(),
                "a fresh message outside its datagram"
            );
            assert!(m.bytes.len() <= g.bytes.len());
            assert_eq!(m.message.is_ok(), itch50::decode(m.bytes).is_ok());
            if let Ok(msg) = m.message {
                locate.on_message(m.session, &msg);
                let _ = locate.symbol_of(&msg).map(|s| s.trimmed().len());
                let h = msg.header();
                let _ = timestamp::feed_latency_ns(g.capture_ns, h.timestamp_ns);
                if let Message::StockDirectory(d) = msg {
                    assert_eq!(locate.symbol(d.header.stock_locate), Some(d.stock));
                }
            }
            fresh += 1;
        });
        assert_eq!(
            fresh,
            u64::from(out.new_messages + out.recovered_messages),
            "fresh messages are the new and recovered ones"
        );
        let all = u64::from(out.new_messages + out.recovered_messages + out.duplicate_messages);
        assert_eq!(all, messages.unwrap_or(0), "{out:?}");
        fresh_seen[f] += fresh;
        if std::mem::replace(&mut last[f], g.bytes) == g.bytes {
            assert_eq!(
                fresh, 0,
                "a repeat of the feed's last datagram has fresh messages"
            );
        }
        if let Some(gap) = out.gap {
            assert!(gap.first <= gap.last);
        }
        if let Ok(Packet::Downstream(p)) = moldudp64::decode(g.bytes) {
            let feed = if f == 0 { Feed::A } else { Feed::B };
            arbitrated += u64::from(p.header.message_count() > 0);
            arb.on_header(feed, &p.header, g.capture_ns, |_| events += 1);
        }
        let c = feeds[f].counters();
        assert_every_count_adds_up(c);
        let _ = (feeds[f].missing_messages(), feeds[f].message_rate_per_s());
    }
    arb.flush(|_| events += 1);
    assert_eq!(arb.pending(), 0, "a flush leaves nothing waiting");
    let c = arb.counters();
    let pairs = c.ab_first_a + c.ab_first_b + c.ab_same_time;
    assert_eq!(events, pairs + c.ab_only_a + c.ab_only_b);
    assert_eq!(
        2 * pairs + c.ab_only_a + c.ab_only_b + c.ab_same_feed_duplicates + c.ab_late_packets,
        arbitrated,
        "every copy arbitrated once: {c:?}"
    );
    for (f, t) in feeds.iter().enumerate() {
        let c = t.counters();
        assert_eq!(
            fresh_seen[f],
            c.moldudp64_new_messages + c.moldudp64_recovered_messages
        );
        let _ = t.open_gaps().count();
    }
    let arbiter = *arb.counters();
    (feeds.map(|t| *t.counters()), arbiter)
}

#[cfg(test)]
mod tests {
    use super::run;

    fn seed(name: &str) -> Vec<u8> {
        crate::seeds::named(crate::feed_seeds::moldudp64_itch(), name)
    }

    /// The seeds are real feeds: every message decodes, each feed covers a loss of the
    /// other, gaps recover, the damaged datagrams are rejected.
    #[test]
    fn the_seeds_reach_every_layer() {
        let ([a, b], arb) = run(&seed("ab-pair"));
        for c in [a, b] {
            assert_eq!(c.itch_messages, c.moldudp64_new_messages);
            assert_eq!(c.moldudp64_undecodable_packets, 0);
        }
        assert_eq!((arb.ab_only_a, arb.ab_only_b), (1, 1));
        assert_eq!(arb.ab_first_a + arb.ab_first_b + arb.ab_same_time, 3);
        let ([a, _], _) = run(&seed("gap-recovery-duplicates"));
        assert_eq!(
            (a.moldudp64_recovered_messages, a.moldudp64_gap_messages),
            (3, 5)
        );
        let ([a, _], _) = run(&seed("session-change-damaged"));
        assert_eq!(a.moldudp64_undecodable_packets, 6);
        assert_eq!(a.moldudp64_session_changes, 1);
    }
}
