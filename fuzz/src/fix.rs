//! Target `fix`: a byte stream framed into FIX messages whole and cut into pieces (the
//! first bytes pick the cuts), and the fields of every message read.
//! The oracle: however the bytes are cut, the same messages come out with the same
//! counters, each stamped with the time of the pieces holding its first and last byte.

use fixscope_core::fix::framing::{FramingCounters, StreamFramer};
use fixscope_core::fix::message::{display, find_field, Fields};
use fixscope_core::fix::tag;

/// A framed message: its bytes, first- and last-byte times, and where it starts in the
/// stream when it is a slice of it (the zero-copy path).
struct Framed {
    bytes: Vec<u8>,
    first_ts: u64,
    last_ts: u64,
    offset: Option<usize>,
}

/// Frames `stream` pushed as `pieces` (lengths summing to the stream's), piece `i` at time
/// `i`, after a resync like a connection's start.
fn frame(stream: &[u8], pieces: &[usize]) -> (Vec<Framed>, FramingCounters) {
    let mut framer = StreamFramer::new();
    framer.resync();
    let mut counters = FramingCounters::default();
    let mut out = Vec::new();
    let mut at = 0;
    let range = stream.as_ptr_range();
    for (i, &n) in pieces.iter().enumerate() {
        framer.push(&stream[at..at + n], i as u64, &mut counters, |m| {
            let p = m.bytes.as_ptr();
            out.push(Framed {
                bytes: m.bytes.to_vec(),
                first_ts: m.first_byte_ts_ns,
                last_ts: m.last_byte_ts_ns,
                offset: range
                    .contains(&p)
                    .then(|| p as usize - range.start as usize),
            })
        });
        at += n;
    }
    assert!(framer.pending_bytes() <= stream.len());
    (out, counters)
}

pub fn fix(data: &[u8]) {
    let Some((&cut_seed, stream)) = data.split_first() else {
        return;
    };
    let (whole, whole_counters) = frame(stream, &[stream.len()]);
    // Pieces of 1..=cut_seed+1 bytes, varied by a small LCG so cuts land everywhere.
    let mut pieces = Vec::new();
    let mut left = stream.len();
    let mut x = cut_seed as usize;
    while left > 0 {
        x = (x * 73 + 41) % 257;
        let n = (x % (cut_seed as usize + 1) + 1).min(left);
        pieces.push(n);
        left -= n;
    }
    let (cut, cut_counters) = frame(stream, &pieces);
    assert_eq!(whole_counters, cut_counters, "counters depend on the cuts");
    assert_eq!(whole.len(), cut.len(), "message count depends on the cuts");
    // Piece index of every stream byte, for the expected timestamps.
    let mut piece_of = Vec::with_capacity(stream.len());
    for (i, &n) in pieces.iter().enumerate() {
        piece_of.extend(std::iter::repeat_n(i as u64, n));
    }
    for (w, c) in whole.iter().zip(&cut) {
        assert_eq!(w.bytes, c.bytes, "different message bytes");
        // In one piece every message is a slice of the stream.
        let offset = w.offset.expect("framed in place");
        assert_eq!(c.first_ts, piece_of[offset], "first-byte time");
        assert_eq!(
            c.last_ts,
            piece_of[offset + w.bytes.len() - 1],
            "last-byte time"
        );
        read_fields(&w.bytes);
    }
}

/// Reads a message the way the correlator does and as `--trace` shows it.
fn read_fields(message: &[u8]) {
    let mut total = 0;
    for (t, value) in Fields::body(message) {
        assert!(t > 0 || value.len() <= message.len());
        total += value.len();
    }
    assert!(total <= message.len());
    for t in [
        tag::MSG_TYPE,
        tag::CL_ORD_ID,
        tag::SENDER_COMP_ID,
        tag::CHECKSUM,
    ] {
        if let Some(v) = find_field(message, t) {
            assert!(!v.contains(&fixscope_core::fix::SOH));
        }
    }
    assert!(display(message).len() >= message.len());
}
