//! Datagrams broken on purpose, each counted where the counters say: a packet cut short,
//! a message count larger than its blocks, a feed restarting mid-capture (a new session,
//! or the old one numbered from 1 again), a message for a Stock Locate no directory named.

use fixscope_itch::feed::Class;
use fixscope_itch::itch50::{self, Message};
use fixscope_itch::moldudp64::{self, DecodeError, Session};
use fixscope_itch::{encode, AbArbiter, Feed, FeedTracker, LocateMap};

use super::faults::assert_every_count_adds_up;
use super::samples;

const S1: &[u8] = b"SESSION001";
const S2: &[u8] = b"SESSION002";

/// A packet of `n` Add Orders numbered from `seq`.
fn packet(session: &[u8], seq: u64, n: u64) -> Vec<u8> {
    let msgs: Vec<Vec<u8>> = (seq..seq + n)
        .map(|r| encode::message(&samples::add_order(r)))
        .collect();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    encode::downstream(session, seq, &refs)
}

fn class(t: &mut FeedTracker, d: &[u8], ts: u64) -> Class {
    t.on_datagram(d, ts, |_| {}).class
}

/// A downstream packet cut at every length short of whole is rejected whole — none of
/// its messages counted — its numbers showing as the gap the next packet reveals, which
/// a good copy fills; cut to exactly its header it is read as a request (Wireshark's
/// rule), still yielding no message.
#[test]
fn a_packet_cut_short_is_rejected_whole_and_its_numbers_show_as_a_gap() {
    let good = packet(S1, 4, 3);
    for cut in 0..good.len() {
        let mut t = FeedTracker::default();
        class(&mut t, &packet(S1, 1, 3), 0);
        let c = class(&mut t, &good[..cut], 1);
        match cut {
            moldudp64::HEADER_LEN => assert_eq!(c, Class::Request),
            _ => assert!(matches!(c, Class::Undecodable(_)), "cut at {cut}: {c:?}"),
        }
        let o = t.on_datagram(&packet(S1, 7, 1), 2, |_| {});
        assert_eq!(
            o.gap.map(|g| (g.first, g.last)),
            Some((4, 6)),
            "cut at {cut}"
        );
        assert_eq!(class(&mut t, &good, 3), Class::Recovered);
        let c = t.counters();
        assert_eq!(
            (c.moldudp64_messages, c.itch_messages),
            (7, 7),
            "cut at {cut}"
        );
        assert_eq!(t.missing_messages(), 0);
        assert_every_count_adds_up(c);
    }
}

/// A message count larger than the blocks the datagram holds (and one smaller): the
/// packet is rejected whole, counted undecodable; the arbiter never sees it, so the
/// other feed's good copy is the only one.
#[test]
fn a_message_count_larger_than_the_packet_rejects_it_whole() {
    let good = packet(S1, 1, 2);
    for count in [3u16, 200, 0xfffe, 1] {
        let mut bad = good.clone();
        bad[18..20].copy_from_slice(&count.to_be_bytes());
        assert!(matches!(
            moldudp64::decode(&bad),
            Err(DecodeError::CountMismatch { .. } | DecodeError::TrailingBytes { .. })
        ));
        let mut a = FeedTracker::default();
        let mut b = FeedTracker::default();
        let mut arb = AbArbiter::default();
        let mut events = Vec::new();
        for (feed, t, d) in [(Feed::A, &mut a, &bad), (Feed::B, &mut b, &good)] {
            t.on_datagram(d, 1, |_| {});
            if let Ok(moldudp64::Packet::Downstream(p)) = moldudp64::decode(d) {
                arb.on_header(feed, &p.header, 1, |e| events.push(e));
            }
        }
        arb.flush(|e| events.push(e));
        let c = a.counters();
        assert_eq!(
            (c.moldudp64_undecodable_packets, c.moldudp64_messages),
            (1, 0)
        );
        assert_eq!(b.counters().moldudp64_new_messages, 2);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].first(), None);
        assert_eq!((arb.counters().ab_only_b, arb.counters().ab_only_a), (1, 0));
        assert_every_count_adds_up(c);
    }
}

/// A feed restarting mid-capture under a new session name: a session change, numbered
/// from its own start, no gap; a late packet of the old session still fills the old
/// session's gap. Restarting under the *same* name from 1 (against the spec, which
/// names a new session): every packet below the old numbering counts as a duplicate,
/// which is what the counters show, not a silent loss.
#[test]
fn a_feed_restarting_mid_capture_is_a_session_change_not_a_gap() {
    let mut t = FeedTracker::default();
    class(&mut t, &packet(S1, 1, 2), 0);
    class(&mut t, &packet(S1, 5, 1), 1); // 3..=4 lost
    let o = t.on_datagram(&packet(S2, 1, 2), 2, |_| {});
    assert_eq!(
        (o.class, o.session_changed, o.gap),
        (Class::New, true, None)
    );
    assert_eq!(class(&mut t, &packet(S1, 3, 2), 3), Class::Recovered);
    assert_eq!(t.next_sequence(&Session::new(S2)), Some(3));
    // The same session numbered from 1 again.
    assert_eq!(class(&mut t, &packet(S2, 1, 2), 4), Class::Duplicate);
    let o = t.on_datagram(&packet(S2, 2, 3), 5, |_| {});
    assert_eq!((o.new_messages, o.duplicate_messages), (2, 1));
    let c = t.counters();
    assert_eq!(
        (
            c.moldudp64_session_changes,
            c.moldudp64_gaps,
            c.moldudp64_recovered_messages,
            c.moldudp64_duplicate_messages
        ),
        (1, 1, 2, 3)
    );
    assert_eq!(t.missing_messages(), 0);
    assert_every_count_adds_up(c);
}

/// A message naming a Stock Locate no Stock Directory of its session named decodes and
/// is counted like any other (`itch_messages`); it has no symbol. (No counter says how
/// many messages named an unknown locate: the assertion is on the map.)
#[test]
fn a_message_for_an_unknown_locate_is_read_and_has_no_symbol() {
    let every = samples::every_read_type();
    let directory = every[1];
    let Message::StockDirectory(d) = directory else {
        panic!("the samples' second message is a directory");
    };
    let unknown = Message::OrderDelete {
        header: encode::itch_header_of(b'D', d.header.stock_locate + 1, samples::OPEN),
        order_reference_number: 9,
    };
    let known = Message::OrderDelete {
        header: encode::itch_header_of(b'D', d.header.stock_locate, samples::OPEN),
        order_reference_number: 9,
    };
    let msgs = [directory, unknown, known].map(|m| encode::message(&m));
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let mut t = FeedTracker::default();
    let mut map = LocateMap::new();
    let mut symbols = Vec::new();
    t.on_datagram(&encode::downstream(S1, 1, &refs), 0, |m| {
        let msg = m.message.expect("every message decodes");
        map.on_message(m.session, &msg);
        symbols.push(map.symbol_of(&msg));
    });
    assert_eq!(symbols, [Some(d.stock), None, Some(d.stock)]);
    assert_eq!(t.counters().itch_messages, 3);
    assert_eq!(
        itch50::decode(&msgs[1]).map(|m| m.header().stock_locate),
        Ok(d.header.stock_locate + 1)
    );
}
