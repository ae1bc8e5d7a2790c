//! Target `reassembly`: one TCP direction whose segments are slices of a known stream,
//! sent in any order, repeated, overlapping, cut (snaplen), with ACKs and FIN/RST between.
//! The oracle: every byte delivered is the stream's byte at that offset, gaps and data
//! together advance one offset, and no byte is stamped with a time that had not come.

use fixscope_core::reassembly::{
    ReassemblyCounters, ReassemblyLimits, StreamEvent, StreamReassembler,
};

/// Length of the known stream the segments are cut from.
const STREAM_LEN: usize = 1 << 16;

fn stream_byte(offset: usize) -> u8 {
    // Not periodic with any short period, so a byte delivered at the wrong offset shows.
    (offset.wrapping_mul(31) ^ (offset >> 7) ^ (offset >> 13)) as u8
}

/// The delivered stream as the oracle sees it.
struct Delivered {
    /// Stream offset of the next delivered byte.
    offset: u64,
    gap_bytes: u64,
    bytes: u64,
    now_ns: u64,
}

impl Delivered {
    fn event(&mut self, event: StreamEvent<'_>) {
        match event {
            StreamEvent::Data { bytes, times, .. } => {
                let ts_ns = times.readable_ns;
                assert!(!bytes.is_empty(), "empty data event");
                assert!(times.captured_ns <= ts_ns, "captured after readable");
                assert!(ts_ns <= self.now_ns, "stamped {ts_ns}, now {}", self.now_ns);
                for (i, &b) in bytes.iter().enumerate() {
                    let at = self.offset as usize + i;
                    assert!(at < STREAM_LEN, "byte beyond anything sent at {at}");
                    assert_eq!(b, stream_byte(at), "wrong byte at stream offset {at}");
                }
                self.offset += bytes.len() as u64;
                self.bytes += bytes.len() as u64;
            }
            StreamEvent::Gap { bytes } => {
                assert!(bytes > 0, "empty gap");
                self.offset += bytes;
                self.gap_bytes += bytes;
            }
        }
    }
}

pub fn reassembly(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    // The initial sequence number comes from the input, so wrap-around is reached.
    let isn = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let limits = ReassemblyLimits {
        max_buffered_bytes: 4096,
        max_buffered_segments: 8,
        hole_timeout_ns: 50,
    };
    let mut r = StreamReassembler::new();
    let mut counters = ReassemblyCounters::default();
    let mut seen = Delivered {
        offset: 0,
        gap_bytes: 0,
        bytes: 0,
        now_ns: 0,
    };
    // The first segment's start is where the stream begins for the reassembler.
    let mut base: Option<usize> = None;
    let mut highest_end = 0usize;
    for op in data[4..].chunks_exact(7) {
        let kind = op[0];
        let start = u16::from_le_bytes([op[1], op[2]]) as usize % STREAM_LEN;
        let len = (u16::from_le_bytes([op[3], op[4]]) as usize % 2048).min(STREAM_LEN - start);
        seen.now_ns += op[5] as u64;
        if kind & 0x80 != 0 {
            // An ACK from the peer up to `start + len`.
            let ack = isn.wrapping_add((start + len) as u32);
            // Taken as read past the reorder window, so an acknowledged hole is given up
            // at once (the path the window delays).
            r.peer_acked(ack);
            let past_window = seen.now_ns + fixscope_core::segment::REORDER_WINDOW_NS + 1;
            r.give_up_acked(past_window, &mut counters, |e| seen.event(e));
            continue;
        }
        // Snaplen: the capture kept only the first `len - cut` bytes of the segment.
        let cut = if kind & 0x20 != 0 {
            (op[6] as usize).min(len)
        } else {
            0
        };
        let payload: Vec<u8> = (start..start + len - cut).map(stream_byte).collect();
        let syn = kind & 0x10 != 0 && base.is_none();
        let seq = isn.wrapping_add(start as u32).wrapping_sub(syn as u32);
        if base.is_none() {
            base = Some(start);
            seen.offset = start as u64;
        }
        highest_end = highest_end.max(start + len);
        r.push(
            seq,
            syn,
            kind & 0x40 != 0,
            &payload,
            cut as u32,
            seen.now_ns,
            &limits,
            &mut counters,
            |e| seen.event(e),
        );
    }
    r.flush(&mut counters, |e| seen.event(e));
    let first = base.unwrap_or(0) as u64;
    // Nothing is delivered past the end of what was sent, and nothing is lost silently:
    // delivered bytes + counted gaps = how far the stream moved.
    assert!(
        seen.offset <= (highest_end as u64).max(first),
        "delivered beyond the end"
    );
    assert_eq!(seen.gap_bytes, counters.gap_bytes);
    assert_eq!(seen.offset - first, seen.bytes + seen.gap_bytes);
    assert_eq!(r.held_bytes(), 0, "flush left bytes behind");
}
