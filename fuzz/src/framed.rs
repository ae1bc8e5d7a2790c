//! Framing a scripted TCP conversation with a seam framer, both directions, and the
//! checks every framer must pass whatever the bytes: each frame is a run of its
//! direction's stream (its bytes exactly the stream's at the sequence numbers it names),
//! no frame is longer than the protocol allows or than the input, and every byte pushed is
//! framed, skipped, dropped at a hole or still held.

use fixscope_protocol::{ByteTimes, Framer, FramingCounters};

use crate::script::segments;

/// What framing a conversation delivered.
pub(crate) struct Framed {
    /// Frames delivered, per direction.
    pub(crate) frames: [u64; 2],
}

/// Frames the conversation `data` (a [`segments`] script) with a new `F` per direction;
/// `on_frame(direction, bytes, first-byte time)` gets every frame in capture order.
/// Frames are at most `max_frame` bytes.
pub(crate) fn frame_conversation<F: Framer>(
    data: &[u8],
    max_frame: usize,
    mut on_frame: impl FnMut(usize, &[u8], u64),
) -> Framed {
    let mut framers = [F::default(), F::default()];
    let mut counters = [FramingCounters::default(), FramingCounters::default()];
    // Each direction's stream as pushed, to check frames against.
    let mut streams: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut delivered = [0usize; 2];
    let mut dropped = [0usize; 2];
    let mut frames = [0u64; 2];
    let mut holes = [0u64; 2];
    for (i, seg) in segments(data).into_iter().enumerate() {
        let d = seg.direction;
        if seg.gap_before {
            dropped[d] += framers[d].pending_bytes();
            holes[d] += 1;
            let cut = counters[d].gap_cut_messages;
            framers[d].gap(&mut counters[d]);
            assert!(
                counters[d].gap_cut_messages - cut <= 1,
                "one frame cut per hole"
            );
            assert_eq!(framers[d].pending_bytes(), 0, "a hole leaves nothing held");
        }
        let start = streams[d].len();
        streams[d].extend_from_slice(seg.bytes);
        let stream = &streams[d];
        let ts = i as u64 + 1;
        let times = ByteTimes::at(ts);
        let before = counters[d].messages;
        let mut got = 0u64;
        framers[d].push_at(seg.bytes, times, start as u32, &mut counters[d], |m| {
            let first = m.first_byte_seq as usize;
            let last = m.last_byte_seq as usize;
            assert!(!m.bytes.is_empty() && m.bytes.len() <= max_frame);
            assert!(m.bytes.len() <= data.len(), "a frame longer than the input");
            assert!(
                first <= last && last < stream.len(),
                "a frame past the stream"
            );
            assert_eq!(m.bytes, &stream[first..=last], "a frame not of the stream");
            assert!(m.first_byte_ts_ns <= m.last_byte_ts_ns && m.last_byte_ts_ns == ts);
            delivered[d] += m.bytes.len();
            got += 1;
            on_frame(d, m.bytes, m.first_byte_ts_ns);
        });
        assert_eq!(counters[d].messages - before, got, "frames counted once");
        frames[d] += got;
        assert!(
            framers[d].pending_bytes() < max_frame,
            "held more than a frame"
        );
    }
    for d in 0..2 {
        assert_eq!(
            delivered[d]
                + counters[d].skipped_bytes as usize
                + dropped[d]
                + framers[d].pending_bytes(),
            streams[d].len(),
            "every byte framed, skipped, dropped at a hole or held: {:?}",
            counters[d]
        );
        assert!(counters[d].gap_cut_messages <= holes[d]);
        assert_eq!(counters[d].messages, frames[d]);
    }
    Framed { frames }
}
