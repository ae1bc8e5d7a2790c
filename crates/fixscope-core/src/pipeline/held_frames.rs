//! Framed messages of a connection held, with their times, until the connection's
//! protocol variant is known (an OUCH session recognised by its SoupBinTCP login, whose
//! version its first order or answer shows): then they are read, in capture order, as if
//! they had just arrived. Bounded: a connection that shows nothing within
//! [`HeldFrames::MAX_FRAMES`] frames or [`HeldFrames::MAX_BYTES`] bytes is given up.

use fixscope_protocol::FramedMessage;

use crate::segment::Direction;

/// One held message: where its bytes are in the buffer, and its framing times.
#[derive(Clone, Copy)]
struct Held {
    direction: Direction,
    start: usize,
    len: usize,
    first_byte_ts_ns: u64,
    last_byte_ts_ns: u64,
    first_byte_seq: u32,
    last_byte_seq: u32,
}

/// The held messages of both directions, in the order they were framed.
#[derive(Default)]
pub(crate) struct HeldFrames {
    bytes: Vec<u8>,
    frames: Vec<Held>,
}

impl HeldFrames {
    /// A session's login, heartbeats and System Events before its first order: a day's
    /// idle pre-open at one heartbeat a second each way is ~2 hours of frames.
    pub(crate) const MAX_FRAMES: usize = 16_384;
    pub(crate) const MAX_BYTES: usize = 1 << 20;

    /// Holds a copy of `msg`; `false` (not held) once the bounds are reached.
    pub(crate) fn hold(&mut self, direction: Direction, msg: &FramedMessage<'_>) -> bool {
        if self.frames.len() >= Self::MAX_FRAMES
            || self.bytes.len() + msg.bytes.len() > Self::MAX_BYTES
        {
            return false;
        }
        self.frames.push(Held {
            direction,
            start: self.bytes.len(),
            len: msg.bytes.len(),
            first_byte_ts_ns: msg.first_byte_ts_ns,
            last_byte_ts_ns: msg.last_byte_ts_ns,
            first_byte_seq: msg.first_byte_seq,
            last_byte_seq: msg.last_byte_seq,
        });
        self.bytes.extend_from_slice(msg.bytes);
        true
    }

    /// How many messages are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }

    /// Each held message, in the order it was framed, with its direction.
    pub(crate) fn each(&self, mut f: impl FnMut(Direction, &FramedMessage<'_>)) {
        for h in &self.frames {
            let msg = FramedMessage {
                bytes: &self.bytes[h.start..h.start + h.len],
                first_byte_ts_ns: h.first_byte_ts_ns,
                last_byte_ts_ns: h.last_byte_ts_ns,
                first_byte_seq: h.first_byte_seq,
                last_byte_seq: h.last_byte_seq,
            };
            f(h.direction, &msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(bytes: &[u8], ts: u64) -> FramedMessage<'_> {
        FramedMessage {
            bytes,
            first_byte_ts_ns: ts,
            last_byte_ts_ns: ts + 1,
            first_byte_seq: 10,
            last_byte_seq: 20,
        }
    }

    #[test]
    fn messages_come_back_in_order_with_their_times_and_directions() {
        let mut h = HeldFrames::default();
        assert!(h.hold(Direction::Request, &msg(b"abc", 5)));
        assert!(h.hold(Direction::Response, &msg(b"de", 9)));
        let mut seen = Vec::new();
        h.each(|d, m| seen.push((d, m.bytes.to_vec(), m.first_byte_ts_ns, m.last_byte_ts_ns)));
        assert_eq!(
            seen,
            vec![
                (Direction::Request, b"abc".to_vec(), 5, 6),
                (Direction::Response, b"de".to_vec(), 9, 10),
            ]
        );
    }

    #[test]
    fn nothing_is_held_past_the_bounds() {
        let mut h = HeldFrames::default();
        let big = vec![0u8; HeldFrames::MAX_BYTES];
        assert!(h.hold(Direction::Request, &msg(&big, 1)));
        assert!(!h.hold(Direction::Request, &msg(b"x", 2)));
        let mut h = HeldFrames::default();
        for i in 0..HeldFrames::MAX_FRAMES {
            assert!(h.hold(Direction::Request, &msg(b"", i as u64)));
        }
        assert!(!h.hold(Direction::Request, &msg(b"", 0)));
        assert_eq!(h.len(), HeldFrames::MAX_FRAMES);
    }
}
