//! Target `sofh_ilink3`: a TCP conversation (a [`crate::script::segments`] script: either
//! direction, cut anywhere, holes between) framed by the SOFH framer of each direction,
//! every framed message checked by the SBE layer, decoded, and handed to the iLink 3
//! order layer (FIXP session numbering, the order book) in capture order.
//! The oracle, besides the framer's (`framed`): a framed message's SOFH length is its
//! length; every message lands in exactly one of the order layer's top-level counts (the
//! partition `fixscope_model::counters::ilink3` documents) and the parts stay within
//! their wholes; an event comes only from a message counted as a request or a new CME
//! business message, from the side that sends it.

use fixscope_ilink3::orders::{Ilink3Connection, Ilink3Event, SessionBook};
use fixscope_ilink3::session::Ilink3Counters;
use fixscope_ilink3::sofh::{SofhFramer, MAX_MESSAGE_LEN};
use fixscope_ilink3::{messages, sbe, schema, Ilink3, Side};
use fixscope_protocol::Protocol;

use crate::framed::frame_conversation;

/// The top-level counts: every message fed lands in exactly one.
fn top_level(c: &Ilink3Counters) -> u64 {
    c.ilink3_negotiate_requests
        + c.ilink3_negotiations
        + c.ilink3_negotiation_rejects
        + c.ilink3_establish_requests
        + c.ilink3_establishments
        + c.ilink3_establish_rejects
        + c.ilink3_terminates
        + c.ilink3_sequences
        + c.ilink3_retransmit_requests
        + c.ilink3_retransmissions
        + c.ilink3_retransmit_rejects
        + c.ilink3_not_applied
        + c.ilink3_business_messages
        + c.ilink3_replayed_messages
        + c.ilink3_requests
        + c.ilink3_before_establish
        + c.ilink3_undecodable_messages
        + c.ilink3_other_messages
        + c.ilink3_wrong_side_messages
}

/// Reads a frame the way the trace and the sbe tool's cross-check do.
fn read_frame(frame: &[u8]) {
    let (len, _) = sbe::sofh(frame).expect("a framed message has its SOFH");
    assert_eq!(len, frame.len(), "a frame is its SOFH's length");
    let Ok(f) = sbe::Frame::parse(frame) else {
        return;
    };
    assert_eq!(f.block.len(), usize::from(f.header.block_length));
    assert!(sbe::HEADERS_LEN + f.block.len() <= frame.len());
    if let Some(t) = schema::template(f.header.template_id) {
        assert_eq!(t.id, f.header.template_id);
    }
    if let Some(s) = schema::sequenced(f.header.template_id) {
        let _ = (f.uint(s.seq_num), f.int(s.uuid), f.text(s.uuid));
    }
}

pub fn sofh_ilink3(data: &[u8]) {
    run(data);
}

/// The target; returns what the order layer counted.
fn run(data: &[u8]) -> Ilink3Counters {
    let mut conn = Ilink3Connection::new();
    let mut book = SessionBook::new();
    let mut fed = 0u64;
    let mut resends = 0u64;
    let mut recognised = [false; 2];
    frame_conversation::<SofhFramer>(data, MAX_MESSAGE_LEN, |d, frame, ts| {
        if !std::mem::replace(&mut recognised[d], true) {
            let _ = Ilink3::recognise(frame);
        }
        read_frame(frame);
        let decoded = messages::decode(frame);
        if let Ok(m) = &decoded {
            let _ = (m.sender(), m.sending_time_ns());
        }
        let side = if d == 0 { Side::Client } else { Side::Host };
        let before = *conn.counters();
        let out = conn.on_message(&mut book, side, frame, ts);
        let c = *conn.counters();
        fed += 1;
        assert_eq!(top_level(&c), fed, "a message in no count or two: {c:?}");
        if decoded.is_err() {
            assert_eq!(
                c.ilink3_undecodable_messages,
                before.ilink3_undecodable_messages + 1
            );
        }
        match out.event {
            Some(Ilink3Event::Request { resend, .. }) => {
                assert_eq!(side, Side::Client);
                assert_eq!(c.ilink3_requests, before.ilink3_requests + 1);
                resends += u64::from(resend);
            }
            Some(Ilink3Event::Response { .. }) => {
                assert_eq!(side, Side::Host);
                assert_eq!(
                    c.ilink3_business_messages,
                    before.ilink3_business_messages + 1
                );
            }
            None => {}
        }
        assert_eq!(c.ilink3_resent_requests, resends);
        assert!(c.ilink3_resent_requests <= c.ilink3_requests);
        assert!(c.ilink3_recovered_messages <= c.ilink3_replayed_messages);
        assert!(
            c.ilink3_unknown_order_responses + c.ilink3_business_rejects_unpaired
                <= c.ilink3_business_messages
        );
        assert!(c.ilink3_sequence_gaps <= c.ilink3_sequence_gap_messages);
        if let Some(name) = conn.session() {
            let _ = (
                book.highest_sequence(name.uuid),
                book.open_orders(name.uuid),
            );
        }
        if let Some(e) = out.event {
            let _ = e.order_event();
        }
    });
    assert!(book.len() as u64 <= fed);
    *conn.counters()
}

#[cfg(test)]
mod tests {
    use super::run;

    fn seed(name: &str) -> Vec<u8> {
        crate::seeds::named(crate::order_seeds::sofh_ilink3(), name)
    }

    /// The seeds are real sessions, cut or not; the corrupt frames are counted as such.
    #[test]
    fn the_seeds_reach_every_layer() {
        let c = run(&seed("session"));
        assert_eq!(
            run(&seed("session-batched-cut")),
            c,
            "cutting changes nothing"
        );
        assert_eq!(
            c.ilink3_undecodable_messages + c.ilink3_wrong_side_messages,
            0
        );
        assert_eq!((c.ilink3_requests, c.ilink3_business_messages), (5, 15));
        assert_eq!(
            (c.ilink3_replayed_messages, c.ilink3_recovered_messages),
            (3, 2)
        );
        assert_eq!(c.ilink3_sequence_gap_messages, 3);
        let c = run(&seed("reestablish-gap-corrupt"));
        assert_eq!(
            (c.ilink3_undecodable_messages, c.ilink3_wrong_side_messages),
            (3, 1)
        );
        assert_eq!(c.ilink3_resent_requests, 1);
    }
}
