//! Target `soupbin_ouch`: a TCP conversation (a [`crate::script::segments`] script: either
//! direction, cut anywhere, holes between) framed by the SoupBinTCP framer of each
//! direction, every framed packet read by SoupBinTCP and both OUCH decoders and handed
//! to the OUCH order layer twice: as OUCH 4.2 and as OUCH 5.0, each with its own book.
//! The oracle, besides the framer's (`framed`): every framed packet reads as SoupBinTCP;
//! every packet lands in exactly one of the order layer's packet counts, or — a client
//! data packet of a logged-in session — makes exactly one request or is counted as an
//! OUCH message not used or not decoded; a new host data packet makes one response or
//! is counted so; resends and replays add up.

use fixscope_ouch::orders::{OuchConnection, OuchEvent, SessionBook, Version};
use fixscope_ouch::session::OuchCounters;
use fixscope_ouch::soupbin::{self, Side, SoupBinFramer, SoupPacket, MAX_PACKET_LEN};
use fixscope_ouch::{ouch42, ouch50, Ouch42};
use fixscope_protocol::Protocol;

use crate::framed::frame_conversation;

/// The packet classes: every packet lands in exactly one, but for a client data packet of
/// a logged-in session (which makes a request, or is an OUCH message counted below).
fn packet_classes(c: &OuchCounters) -> u64 {
    c.soupbin_login_requests
        + c.soupbin_logins
        + c.soupbin_login_rejects
        + c.soupbin_logouts
        + c.soupbin_end_of_session
        + c.soupbin_heartbeats
        + c.soupbin_debug_packets
        + c.soupbin_sequenced_packets
        + c.soupbin_replayed_packets
        + c.soupbin_before_login
        + c.soupbin_undecodable_packets
        + c.soupbin_wrong_side_packets
}

/// OUCH messages counted and not turned into an event.
fn messages_counted(c: &OuchCounters) -> u64 {
    c.ouch_other_messages + c.ouch_undecodable_messages
}

/// One version's order layer over a conversation, checking each packet's counts.
struct Layer {
    conn: OuchConnection,
    book: SessionBook,
    resends: u64,
}

impl Layer {
    fn new(version: Version) -> Self {
        Layer {
            conn: OuchConnection::new(version),
            book: SessionBook::new(),
            resends: 0,
        }
    }

    fn packet(&mut self, side: Side, frame: &[u8], ts: u64) {
        let before = *self.conn.counters();
        let out = self.conn.on_packet(&mut self.book, side, frame, ts);
        let after = *self.conn.counters();
        let classes = packet_classes(&after) - packet_classes(&before);
        let counted = messages_counted(&after) - messages_counted(&before);
        let new_sequenced = after.soupbin_sequenced_packets - before.soupbin_sequenced_packets;
        match out.event {
            Some(OuchEvent::Request { resend, .. }) => {
                assert_eq!((classes, counted), (0, 0), "a request counted as a packet");
                assert_eq!(side, Side::Client);
                self.resends += u64::from(resend);
            }
            Some(OuchEvent::Response { .. }) => {
                assert_eq!((new_sequenced, classes, counted), (1, 1, 0));
                assert_eq!(side, Side::Host);
            }
            None if classes == 0 => {
                assert_eq!(counted, 1, "a client message neither a request nor counted");
            }
            None => {
                assert_eq!(classes, 1, "a packet in two classes: {after:?}");
                // A new host message is a response or counted; a recovered one may be
                // counted too (it is read for the orders' state).
                assert!(counted <= 1);
                if new_sequenced == 1 {
                    assert_eq!(
                        counted, 1,
                        "a new host message neither a response nor counted"
                    );
                }
            }
        }
        let c = &after;
        assert_eq!(c.ouch_resent_requests, self.resends);
        assert!(c.soupbin_recovered_packets <= c.soupbin_replayed_packets);
        assert!(c.soupbin_sequence_gaps <= c.soupbin_sequence_gap_packets);
        assert!(c.soupbin_sequence_gaps <= c.soupbin_logins);
        if let Some(name) = self.conn.session() {
            let _ = (
                self.book.highest_sequence(name),
                self.book.open_orders(name),
            );
        }
    }
}

pub fn soupbin_ouch(data: &[u8]) {
    run(data);
}

/// The target; returns what the 4.2 and the 5.0 order layer counted.
fn run(data: &[u8]) -> [OuchCounters; 2] {
    let mut layers = [Layer::new(Version::Ouch42), Layer::new(Version::Ouch50)];
    let mut first_bytes: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let framed = frame_conversation::<SoupBinFramer>(data, 2 + MAX_PACKET_LEN, |d, frame, ts| {
        if first_bytes[d].is_empty() {
            first_bytes[d] = frame.to_vec();
            let _ = Ouch42::recognise(frame);
        }
        let packet = match soupbin::decode(frame) {
            Ok(p) => p,
            Err(e) => panic!("a framed packet does not read: {e:?}"),
        };
        if let SoupPacket::UnsequencedData { message } | SoupPacket::SequencedData { message } =
            packet
        {
            assert_eq!(message.len() + 3, frame.len());
        }
        let _ = ouch42::decode(&packet).map(|m| m.map(|m| (m.token(), m.replaced_token())));
        let _ =
            ouch50::decode(&packet).map(|m| m.map(|m| (m.user_ref_num(), m.orig_user_ref_num())));
        let side = if d == 0 { Side::Client } else { Side::Host };
        for layer in &mut layers {
            layer.packet(side, frame, ts);
        }
    });
    let frames = framed.frames[0] + framed.frames[1];
    for layer in &layers {
        // Every packet reached the layer; none was counted past it.
        assert!(packet_classes(layer.conn.counters()) <= frames);
    }
    layers.map(|l| *l.conn.counters())
}

#[cfg(test)]
mod tests {
    use super::run;

    fn seed(name: &str) -> Vec<u8> {
        crate::seeds::named(crate::order_seeds::soupbin_ouch(), name)
    }

    /// The seeds are real sessions: each version's reads its own without an error, and
    /// the replay, the gap and the damage are where they were put.
    #[test]
    fn the_seeds_reach_every_layer() {
        let [c42, c50] = run(&seed("ouch42-session"));
        assert_eq!((c42.soupbin_logins, c42.soupbin_sequenced_packets), (1, 12));
        assert_eq!(
            c42.ouch_undecodable_messages + c42.soupbin_undecodable_packets,
            0
        );
        assert_eq!(c42.ouch_unknown_order_responses, 0);
        assert!(
            c50.ouch_undecodable_messages > 0,
            "4.2 messages are no 5.0 ones"
        );
        let [_, c50] = run(&seed("ouch50-session"));
        assert_eq!(
            c50.ouch_undecodable_messages + c50.ouch_unknown_order_responses,
            0
        );
        assert_eq!(
            (c50.soupbin_sequenced_packets, c50.ouch_resent_requests),
            (12, 1)
        );
        let [c42, _] = run(&seed("ouch42-relogin-replay-gap"));
        assert_eq!(
            (c42.soupbin_logins, c42.soupbin_sequence_gap_packets),
            (4, 5)
        );
        assert_eq!(
            (c42.soupbin_replayed_packets, c42.soupbin_recovered_packets),
            (7, 4)
        );
        let [c42, _] = run(&seed("ouch42-holes-cuts-garbage"));
        assert!(c42.soupbin_replayed_packets > 0 && c42.soupbin_sequenced_packets > 0);
    }
}
