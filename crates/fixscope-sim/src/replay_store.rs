//! The messages a session sent (or queued while disconnected), kept so a ResendRequest can
//! be answered with the messages themselves: application messages (and session Rejects)
//! are resent under their original MsgSeqNum with PossDupFlag 43=Y and OrigSendingTime 122;
//! runs of other administrative messages are covered by one SequenceReset-GapFill.

use std::collections::VecDeque;

use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

/// One stored message.
#[derive(Clone, Debug)]
pub struct Stored {
    pub seq: u64,
    pub msg_type: Vec<u8>,
    /// Its SendingTime (52): the replay's OrigSendingTime (122).
    pub sending_time: Vec<u8>,
    /// The fields after the standard header (35, 49, 56, 34, 52), up to the checksum.
    pub body: Vec<u8>,
    /// The caller's tag for it (the client's request number; 0: none).
    pub stamp: u64,
}

impl Stored {
    /// Administrative messages other than Reject are gap-filled, never resent (FIX 4.4
    /// Vol. 2, "Resend Request").
    pub fn gap_filled(&self) -> bool {
        matches!(&self.msg_type[..], b"0" | b"1" | b"2" | b"4" | b"5" | b"A")
    }

    /// The body's fields, to encode again.
    pub fn body_fields(&self) -> Fields<'_> {
        Fields::new(&self.body)
    }
}

/// The last `capacity` messages, in MsgSeqNum order.
#[derive(Debug, Default)]
pub struct ReplayStore {
    capacity: usize,
    messages: VecDeque<Stored>,
}

impl ReplayStore {
    pub fn new(capacity: usize) -> Self {
        ReplayStore {
            capacity,
            messages: VecDeque::new(),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    pub fn clear(&mut self) {
        self.messages.clear();
    }

    /// Keeps `msg` (a whole encoded message from our own encoder: header fields in the
    /// order 8, 9, 35, 49, 56, 34, 52).
    pub fn keep(&mut self, msg: &[u8], stamp: u64) {
        if self.capacity == 0 {
            return;
        }
        let mut s = Stored {
            seq: 0,
            msg_type: Vec::new(),
            sending_time: Vec::new(),
            body: Vec::new(),
            stamp,
        };
        // Offsets: the body begins after the SendingTime field, ends before "10=".
        let mut pos = 0;
        let mut body_start = None;
        for field in msg.split_inclusive(|&b| b == 0x01) {
            let end = pos + field.len();
            if body_start.is_none() {
                let f = &field[..field.len() - 1];
                if let Some(eq) = f.iter().position(|&b| b == b'=') {
                    let (t, v) = (&f[..eq], &f[eq + 1..]);
                    match t {
                        b"35" => s.msg_type = v.to_vec(),
                        b"34" => s.seq = crate::uint_field::parse_uint(v).unwrap_or(0),
                        b"52" => {
                            s.sending_time = v.to_vec();
                            body_start = Some(end);
                        }
                        _ => {}
                    }
                }
            }
            pos = end;
        }
        let trailer = msg.len().saturating_sub(7);
        if let Some(b) = body_start.filter(|&b| b <= trailer) {
            s.body = msg[b..trailer].to_vec();
        }
        if self.messages.len() == self.capacity {
            self.messages.pop_front();
        }
        self.messages.push_back(s);
    }

    /// The stored messages with MsgSeqNum in `[begin, end]`, in order.
    pub fn range(&self, begin: u64, end: u64) -> impl Iterator<Item = &Stored> {
        self.messages
            .iter()
            .filter(move |m| m.seq >= begin && m.seq <= end)
    }

    /// Whether `tag` is a header field our encoder writes itself (never copied from a body).
    pub fn is_header(t: u32) -> bool {
        matches!(
            t,
            tag::BEGIN_STRING
                | 9
                | tag::MSG_TYPE
                | tag::SENDER_COMP_ID
                | tag::TARGET_COMP_ID
                | tag::MSG_SEQ_NUM
                | 52
                | 10
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::fix::encode::FixEncoder;

    #[test]
    fn keeps_body_and_sending_time() {
        let mut enc = FixEncoder::new();
        enc.start(b"D")
            .field(49, b"C")
            .field(56, b"E")
            .field_uint(34, 7)
            .field(52, b"20260101-00:00:00.000")
            .field(11, b"X1")
            .field(55, b"AAPL");
        let mut out = Vec::new();
        enc.finish(b"FIX.4.4", &mut out);
        let mut store = ReplayStore::new(2);
        store.keep(&out, 9);
        let m = store.range(7, 7).next().unwrap();
        assert_eq!(m.seq, 7);
        assert_eq!(m.msg_type, b"D");
        assert_eq!(m.sending_time, b"20260101-00:00:00.000");
        assert_eq!(m.body, b"11=X1\x0155=AAPL\x01");
        assert_eq!(m.stamp, 9);
        assert!(!m.gap_filled());
        store.keep(&out, 1);
        store.keep(&out, 2);
        assert_eq!(store.range(0, 100).count(), 2, "bounded");
    }
}
