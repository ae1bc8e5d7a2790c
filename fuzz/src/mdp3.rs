//! Target `mdp3`: a channel's A/B capture (a [`crate::script::datagrams`] script:
//! datagrams of feed A or B, capture time stepping) read as MDP 3.0 packets, every message
//! by its SBE header, root block and repeating groups, each feed tracked by its own
//! `ChannelTracker` (small bounds on gaps, instruments and RptSeq gaps, so forgetting is
//! reached), every decoded packet arbitrated by one `AbArbiter` (a small window and
//! bound), instrument definitions learnt.
//! The oracle: a decoded packet's messages fill the datagram; every datagram lands in
//! exactly one packet class, every message in one message class, every fresh message in
//! one template count (the partitions `fixscope_model::counters::mdp3` documents); the
//! fresh messages handed out are those of new and recovered packets, each inside its
//! datagram; every RptSeq entry of a fresh message is counted once; a repeat of a feed's
//! last datagram is never new; the arbiter accounts for every copy once.

use fixscope_mdp3::feed::Class;
use fixscope_mdp3::{
    messages, packet, sbe, AbArbiter, ArbiterConfig, ChannelConfig, ChannelTracker, Feed,
    Instruments, Mdp3Counters, Message,
};

use crate::script::datagrams;

/// The partitions the counters promise.
fn assert_every_count_adds_up(c: &Mdp3Counters) {
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
    assert!(c.mdp3_gaps <= c.mdp3_gap_packets && c.mdp3_gaps_forgotten <= c.mdp3_gaps);
    assert!(c.mdp3_rptseq_gaps <= c.mdp3_rptseq_gap_updates);
    assert!(c.mdp3_rptseq_gap_instruments <= c.mdp3_rptseq_gaps);
    assert!(
        c.mdp3_rptseq_recovered_updates + c.mdp3_rptseq_duplicate_updates <= c.mdp3_rptseq_updates
    );
    assert!(c.mdp3_peak_messages_per_ms <= c.mdp3_messages);
}

/// Reads a checked packet's messages every way the crate offers; returns their count.
fn read_packet(datagram: &[u8]) -> Option<usize> {
    let p = packet::parse(datagram).ok()?;
    let mut len = packet::PACKET_HEADER_LEN;
    for m in p.messages() {
        assert!(m.len() >= sbe::MIN_MESSAGE_LEN);
        len += m.len();
        if let Ok(f) = sbe::Frame::parse(m) {
            assert_eq!(f.root.bytes.len(), usize::from(f.header.block_length));
            assert!(sbe::MIN_MESSAGE_LEN + f.root.bytes.len() + f.tail.len() == m.len());
        }
        if let Ok(m) = messages::decode(m) {
            read_entries(&m);
        }
    }
    assert_eq!(len, datagram.len(), "messages fill the packet");
    assert_eq!(packet::headers(&p).count(), p.message_count());
    Some(p.message_count())
}

/// Walks every entry of a decoded message's groups (lazily read: this is where a bad
/// group would show).
fn read_entries(m: &Message<'_>) {
    match *m {
        Message::Book(b) => {
            let n = b.entries.len();
            assert_eq!(b.entries.count(), n);
        }
        Message::TradeSummary(t) => {
            let n = t.entries.len();
            assert_eq!(t.entries.count(), n);
        }
        Message::OrderBook(o) => {
            let _ = o.entries.map(|e| e.security_id).max();
        }
        Message::Volume(v) => {
            let _ = v.entries.map(|e| e.rpt_seq).max();
        }
        Message::ChannelReset(r) => {
            let _ = r.appl_ids.flatten().count();
        }
        _ => {}
    }
}

pub fn mdp3(data: &[u8]) {
    run(data);
}

/// The target; returns what each feed and the arbiter counted.
fn run(data: &[u8]) -> ([Mdp3Counters; 2], Mdp3Counters) {
    let config = ChannelConfig {
        max_open_gaps: 4,
        max_instruments: 4,
        max_instrument_gaps: 2,
    };
    let mut feeds = [ChannelTracker::new(config), ChannelTracker::new(config)];
    let mut instruments = Instruments::new();
    let mut arb = AbArbiter::new(ArbiterConfig {
        window: 3,
        max_pending: 8,
    });
    let mut events = 0u64;
    let mut arbitrated = 0u64;
    let mut rpt_updates = [0u64; 2];
    let mut last: [&[u8]; 2] = [&[], &[]];
    for g in datagrams(data) {
        let f = g.feed;
        let count = read_packet(g.bytes);
        let range = g.bytes.as_ptr_range();
        let mut fresh = 0usize;
        let mut updates = 0u64;
        let out = feeds[f].on_datagram(g.bytes, g.capture_ns, |m| {
            assert!(
                range.contains(&m.bytes.as_ptr()),
                "a message outside its datagram"
            );
            assert_eq!(m.index, fresh, "fresh messages in packet order");
            fresh += 1;
            if let Ok(msg) = &m.message {
                if let Ok(Some(u)) = messages::rpt_seq_updates(m.bytes) {
                    updates += u.count() as u64;
                }
                if instruments.learn(msg) {
                    let Message::InstrumentDefinition(d) = msg else {
                        panic!("learnt from no definition");
                    };
                    let _ = instruments.symbol(d.security_id);
                }
            }
        });
        rpt_updates[f] += updates;
        if std::mem::replace(&mut last[f], g.bytes) == g.bytes {
            assert_ne!(
                out.class,
                Class::New,
                "a repeat of the feed's last packet is new"
            );
        }
        assert_eq!(out.messages, count.unwrap_or(0));
        match out.class {
            Class::New | Class::Recovered => assert_eq!(fresh, out.messages),
            Class::Undecodable(_) => assert!(count.is_none() && fresh == 0),
            _ => assert_eq!(fresh, 0, "messages of a duplicate handed out"),
        }
        if let Some(gap) = out.gap {
            assert!(gap.first <= gap.last);
        }
        if let Some(h) = out.header {
            let feed = if f == 0 { Feed::A } else { Feed::B };
            arbitrated += 1;
            arb.on_header(feed, &h, g.capture_ns, |_| events += 1);
        }
        let t = &feeds[f];
        assert_every_count_adds_up(t.counters());
        assert_eq!(t.counters().mdp3_rptseq_updates, rpt_updates[f]);
        let _ = (t.missing_packets(), t.next_msg_seq_num());
        for (sid, missing) in t.instruments_missing() {
            assert!(missing > 0);
            assert!(!t.instrument_gaps(sid).is_empty());
        }
    }
    arb.flush(|_| events += 1);
    assert_eq!(arb.pending(), 0, "a flush leaves nothing waiting");
    let c = arb.counters();
    let pairs = c.mdp3_ab_first_a + c.mdp3_ab_first_b + c.mdp3_ab_same_time;
    assert_eq!(events, pairs + c.mdp3_ab_only_a + c.mdp3_ab_only_b);
    assert_eq!(
        2 * pairs
            + c.mdp3_ab_only_a
            + c.mdp3_ab_only_b
            + c.mdp3_ab_same_feed_duplicates
            + c.mdp3_ab_late_packets,
        arbitrated,
        "every copy arbitrated once: {c:?}"
    );
    let arbiter = *c;
    (feeds.map(|t| *t.counters()), arbiter)
}

#[cfg(test)]
mod tests {
    use super::run;

    fn seed(name: &str) -> Vec<u8> {
        crate::seeds::named(crate::feed_seeds::mdp3(), name)
    }

    /// The seeds are real channels: every message decodes, RptSeq gaps open and fill,
    /// epochs begin, the damaged datagrams and messages are counted.
    #[test]
    fn the_seeds_reach_every_layer() {
        let ([a, b], arb) = run(&seed("ab-channel"));
        for c in [a, b] {
            assert_eq!(c.mdp3_undecodable_messages + c.mdp3_other_messages, 0);
            assert_eq!(c.mdp3_instrument_definitions, 2);
        }
        assert!(a.mdp3_rptseq_gaps > 0 && a.mdp3_rptseq_recovered_updates > 0);
        assert!(arb.mdp3_ab_only_a > 0 && arb.mdp3_ab_only_b > 0);
        let ([a, _], _) = run(&seed("gap-reset-restart"));
        assert_eq!((a.mdp3_epochs, a.mdp3_channel_resets), (2, 1));
        assert!(a.mdp3_recovered_packets > 0 && a.mdp3_previous_epoch_packets > 0);
        let ([a, _], _) = run(&seed("damaged"));
        assert_eq!(a.mdp3_undecodable_packets, 4);
        assert_eq!(a.mdp3_undecodable_messages, 4, "{a:?}");
    }
}
