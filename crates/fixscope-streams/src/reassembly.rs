//! TCP stream reassembly for one direction of one connection.
//!
//! Turns segments (which may repeat, overlap, arrive out of order or go missing) into the
//! in-order byte stream the application read, each run of bytes tagged with the time it
//! became readable. Sequence numbers are mapped to 64-bit stream offsets so wrap-around
//! needs no special cases. Out-of-order data is held in a bounded buffer; when the hole
//! before it does not fill in time (or the buffer is full) the hole is declared a gap and
//! the consumer resynchronises.
//!
//! Times of held bytes: when a retransmission fills the hole, the bytes held behind it
//! became readable then (the later of their own time and the fill's). When the hole is
//! given up instead (timeout, limits, the peer's ACK, end of capture), nobody saw when the
//! host got them: each held segment keeps its own capture time — never the moment we gave
//! up, which is only when fixscope stopped waiting (after a ring overflow, ~1 s late).
//! Either way a held segment is readable no earlier than the held bytes before it (the
//! host reads in order: one written late delays those behind it). Its bytes also keep the
//! time their own segment was captured ([`StreamEvent::Data`]'s `times`): a response
//! is timed by it, as it was on the wire then whatever filled the hole later.
//!
//! The peer's ACK beyond a hole says the host received bytes the capture has not shown —
//! yet. A capture host writes a tap's two ports in its own order, so the ACK may be read
//! before the segment it acknowledges (#47): the hole is given up only once the capture's
//! clock passed the first held segment's time by [`REORDER_WINDOW_NS`]
//! ([`StreamReassembler::give_up_acked`], which the pipeline calls for every stream whose
//! [`StreamReassembler::take_new_deadline`] said when). A response held by the correlator
//! for the same window (stamped at or after its request) therefore always finds the
//! request held behind a real capture drop.

use std::collections::BTreeMap;

pub use fixscope_model::segment::{ByteTimes, REORDER_WINDOW_NS};

/// `drain_held`'s time for a hole given up: no fill time, each segment keeps its own.
const GIVEN_UP: u64 = 0;
/// No acknowledged hole is waiting for the reorder window.
const NO_DEADLINE: u64 = u64::MAX;

/// Limits of the out-of-order buffer of one stream.
#[derive(Clone, Copy, Debug)]
pub struct ReassemblyLimits {
    /// Bytes held waiting for a hole to fill.
    pub max_buffered_bytes: usize,
    /// Segments held waiting for a hole to fill.
    pub max_buffered_segments: usize,
    /// A hole still open this long after data behind it arrived is given up as a gap.
    pub hole_timeout_ns: u64,
}

impl Default for ReassemblyLimits {
    fn default() -> Self {
        ReassemblyLimits {
            max_buffered_bytes: 4 << 20,
            max_buffered_segments: 1024,
            // Longer than Linux's minimum RTO (200 ms) so a real retransmission can fill it.
            hole_timeout_ns: 1_000_000_000,
        }
    }
}

pub use fixscope_model::counters::reassembly::ReassemblyCounters;

/// What the reassembler hands on, in stream order.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// Contiguous stream bytes with their times: readable when `times.readable_ns`, carried
    /// by a segment captured at `times.captured_ns` (earlier when it was held behind a
    /// hole); `seq` is the TCP sequence number of the first (`--breakdown` places socket
    /// calls by it).
    Data {
        bytes: &'a [u8],
        times: ByteTimes,
        seq: u32,
    },
    /// `bytes` stream bytes are missing here; what follows is not contiguous with what came
    /// before.
    Gap { bytes: u64 },
}

#[derive(Debug)]
struct HeldSegment {
    ts_ns: u64,
    data: Vec<u8>,
    /// Bytes after `data` that were on the wire but not captured.
    missing_tail: u32,
}

/// One direction of one TCP connection.
#[derive(Debug)]
pub struct StreamReassembler {
    /// Sequence number of the next expected byte, once known.
    next_seq: Option<u32>,
    /// Stream offset of the next expected byte (bytes delivered or skipped so far).
    next_offset: u64,
    /// Segments beyond a hole, by stream offset.
    held: BTreeMap<u64, HeldSegment>,
    held_bytes: usize,
    /// When the oldest held segment arrived.
    hole_since_ns: u64,
    /// Set by FIN or RST: later data is not part of this stream.
    finished: bool,
    /// The peer's highest acknowledgement number, once one was seen.
    peer_ack: Option<u32>,
    /// The first hole is acknowledged: given up once the capture's clock is past this
    /// (its first held segment's time plus the reorder window); [`NO_DEADLINE`] else.
    acked_deadline_ns: u64,
    /// Where the hole the deadline was set for begins (`next_offset` then).
    acked_hole_at: u64,
    /// A deadline was set that [`StreamReassembler::take_new_deadline`] did not hand out.
    new_deadline: bool,
}

impl Default for StreamReassembler {
    fn default() -> Self {
        StreamReassembler {
            next_seq: None,
            next_offset: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            hole_since_ns: 0,
            finished: false,
            peer_ack: None,
            acked_deadline_ns: NO_DEADLINE,
            acked_hole_at: 0,
            new_deadline: false,
        }
    }
}

impl StreamReassembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once FIN or RST was seen.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Bytes currently held behind a hole.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Processes one segment of this direction. Inlined into the pipeline's segment loop
    /// (another crate since the core's split: without the hint it became a call, +1.7% of
    /// the instructions per message).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn push<F>(
        &mut self,
        seq: u32,
        syn: bool,
        fin_or_rst: bool,
        payload: &[u8],
        missing_tail: u32,
        ts_ns: u64,
        limits: &ReassemblyLimits,
        counters: &mut ReassemblyCounters,
        mut out: F,
    ) where
        F: FnMut(StreamEvent<'_>),
    {
        let data_seq = if syn { seq.wrapping_add(1) } else { seq };
        let next_seq = *self.next_seq.get_or_insert(data_seq);
        if payload.is_empty() && missing_tail == 0 {
            if fin_or_rst {
                self.finished = true;
            }
            self.expire_hole(ts_ns, limits, counters, &mut out);
            return;
        }
        // Position relative to the next expected byte, in a window of ±2 GiB.
        let delta = data_seq.wrapping_sub(next_seq) as i32 as i64;
        let wire_len = payload.len() as i64 + missing_tail as i64;
        if delta + wire_len <= 0 {
            counters.retransmitted_bytes += wire_len as u64;
        } else if delta <= 0 {
            let dup = (-delta) as usize;
            counters.retransmitted_bytes += dup as u64;
            let (data, tail) = if dup <= payload.len() {
                (&payload[dup..], missing_tail)
            } else {
                (&payload[..0], missing_tail - (dup - payload.len()) as u32)
            };
            self.deliver(data, tail, ByteTimes::at(ts_ns), counters, &mut out);
            self.drain_held(ts_ns, counters, &mut out);
        } else {
            self.hold(delta as u64, payload, missing_tail, ts_ns, counters);
            self.enforce_limits(ts_ns, limits, counters, &mut out);
        }
        if fin_or_rst {
            self.finished = true;
        }
        self.expire_hole(ts_ns, limits, counters, &mut out);
        if !self.held.is_empty() || self.acked_deadline_ns != NO_DEADLINE {
            self.settle_acked();
        }
    }

    /// The peer acknowledged everything before `ack_seq`. If that covers a hole, the host
    /// received bytes the capture has not shown: a capture drop (no retransmission will
    /// come) — or the capture host wrote the ACK before the segment (two tap ports, two
    /// queues). The hole waits for the reorder window from its first held segment's time
    /// (see the module); [`StreamReassembler::take_new_deadline`] says until when. One
    /// comparison when the ACK moves nothing.
    #[inline]
    pub fn peer_acked(&mut self, ack_seq: u32) {
        if let Some(highest) = self.peer_ack {
            if ack_seq.wrapping_sub(highest) as i32 <= 0 {
                return;
            }
        }
        self.peer_ack = Some(ack_seq);
        if !self.held.is_empty() && self.acked_deadline_ns == NO_DEADLINE {
            self.arm_acked();
        }
    }

    /// A deadline set since the last call: the capture time after which
    /// [`StreamReassembler::give_up_acked`] gives an acknowledged hole up.
    #[inline]
    pub fn take_new_deadline(&mut self) -> Option<u64> {
        if !self.new_deadline {
            return None;
        }
        self.new_deadline = false;
        (self.acked_deadline_ns != NO_DEADLINE).then_some(self.acked_deadline_ns)
    }

    /// The capture's clock is at `now_ns`: an acknowledged hole whose reorder window has
    /// passed is a gap (the capture dropped those bytes); what was held behind it is
    /// delivered with its own timestamps, which are when the host really had those bytes.
    pub fn give_up_acked<F>(&mut self, now_ns: u64, counters: &mut ReassemblyCounters, mut out: F)
    where
        F: FnMut(StreamEvent<'_>),
    {
        while now_ns > self.acked_deadline_ns {
            self.acked_deadline_ns = NO_DEADLINE;
            self.give_up_hole(now_ns, counters, &mut out);
            if !self.held.is_empty() {
                self.arm_acked();
            }
        }
    }

    /// After a segment: the deadline follows the first hole (none when nothing is held, a
    /// new one when the hole it was set for is gone; a segment held in the same hole later
    /// keeps it).
    fn settle_acked(&mut self) {
        if self.held.is_empty() {
            self.acked_deadline_ns = NO_DEADLINE;
            self.new_deadline = false;
        } else if self.acked_deadline_ns == NO_DEADLINE || self.acked_hole_at != self.next_offset {
            self.acked_deadline_ns = NO_DEADLINE;
            self.arm_acked();
        }
    }

    /// Sets the deadline when the peer's ACK covers the first hole.
    fn arm_acked(&mut self) {
        let (Some(next_seq), Some(ack)) = (self.next_seq, self.peer_ack) else {
            return;
        };
        let acked_ahead = ack.wrapping_sub(next_seq) as i32;
        let Some((&offset, first)) = self.held.first_key_value() else {
            return;
        };
        if acked_ahead <= 0 || offset > self.next_offset + acked_ahead as u64 {
            return;
        }
        self.acked_deadline_ns = first.ts_ns.saturating_add(REORDER_WINDOW_NS);
        self.acked_hole_at = self.next_offset;
        self.new_deadline = true;
    }

    /// Gives up on any open hole and delivers everything held (end of capture).
    pub fn flush<F>(&mut self, counters: &mut ReassemblyCounters, mut out: F)
    where
        F: FnMut(StreamEvent<'_>),
    {
        while !self.held.is_empty() {
            self.skip_to_first_held(counters, &mut out);
            self.drain_held(GIVEN_UP, counters, &mut out);
        }
        self.acked_deadline_ns = NO_DEADLINE;
        self.new_deadline = false;
    }

    #[inline]
    fn deliver<F>(
        &mut self,
        data: &[u8],
        missing_tail: u32,
        times: ByteTimes,
        counters: &mut ReassemblyCounters,
        out: &mut F,
    ) where
        F: FnMut(StreamEvent<'_>),
    {
        if !data.is_empty() {
            let seq = self.next_seq.unwrap_or(0);
            out(StreamEvent::Data {
                bytes: data,
                times,
                seq,
            });
            self.advance(data.len() as u64);
        }
        if missing_tail > 0 {
            counters.gaps += 1;
            counters.gap_bytes += missing_tail as u64;
            out(StreamEvent::Gap {
                bytes: missing_tail as u64,
            });
            self.advance(missing_tail as u64);
        }
    }

    fn advance(&mut self, n: u64) {
        self.next_offset += n;
        if let Some(seq) = self.next_seq.as_mut() {
            *seq = seq.wrapping_add(n as u32);
        }
    }

    fn hold(
        &mut self,
        ahead: u64,
        payload: &[u8],
        missing_tail: u32,
        ts_ns: u64,
        counters: &mut ReassemblyCounters,
    ) {
        counters.out_of_order_segments += 1;
        let offset = self.next_offset + ahead;
        if self.held.is_empty() {
            self.hole_since_ns = ts_ns;
        }
        // A retransmission of something already held: keep the longer copy.
        if let Some(existing) = self.held.get(&offset) {
            if existing.data.len() + existing.missing_tail as usize
                >= payload.len() + missing_tail as usize
            {
                counters.retransmitted_bytes += payload.len() as u64 + missing_tail as u64;
                return;
            }
            self.held_bytes -= existing.data.len();
        }
        self.held_bytes += payload.len();
        self.held.insert(
            offset,
            HeldSegment {
                ts_ns,
                data: payload.to_vec(),
                missing_tail,
            },
        );
    }

    /// Delivers held segments that are now contiguous, each at the latest of its own time,
    /// the held bytes' before it (the host reads in order) and `now_ns`: the time a
    /// retransmission filled the hole, or [`GIVEN_UP`] when the hole was given up (see the
    /// module doc).
    fn drain_held<F>(&mut self, now_ns: u64, counters: &mut ReassemblyCounters, out: &mut F)
    where
        F: FnMut(StreamEvent<'_>),
    {
        let mut readable_ns = now_ns;
        while let Some(entry) = self.held.first_entry() {
            let offset = *entry.key();
            if offset > self.next_offset {
                break;
            }
            let seg = entry.remove();
            self.held_bytes -= seg.data.len();
            let overlap = self.next_offset - offset;
            let wire_len = seg.data.len() as u64 + seg.missing_tail as u64;
            if overlap >= wire_len {
                counters.retransmitted_bytes += wire_len;
                continue;
            }
            counters.retransmitted_bytes += overlap;
            readable_ns = readable_ns.max(seg.ts_ns);
            let times = ByteTimes {
                captured_ns: seg.ts_ns,
                readable_ns,
            };
            let (data, tail) = if (overlap as usize) <= seg.data.len() {
                (&seg.data[overlap as usize..], seg.missing_tail)
            } else {
                (
                    &seg.data[..0],
                    seg.missing_tail - (overlap as usize - seg.data.len()) as u32,
                )
            };
            self.deliver(data, tail, times, counters, out);
        }
        // What is still held now waits behind a new hole, which starts now.
        if !self.held.is_empty() && now_ns > self.hole_since_ns {
            self.hole_since_ns = now_ns;
        }
    }

    fn skip_to_first_held<F>(&mut self, counters: &mut ReassemblyCounters, out: &mut F)
    where
        F: FnMut(StreamEvent<'_>),
    {
        if let Some((&offset, _)) = self.held.first_key_value() {
            if offset > self.next_offset {
                let missing = offset - self.next_offset;
                counters.gaps += 1;
                counters.gap_bytes += missing;
                out(StreamEvent::Gap { bytes: missing });
                self.advance(missing);
            }
        }
    }

    fn enforce_limits<F>(
        &mut self,
        now_ns: u64,
        limits: &ReassemblyLimits,
        counters: &mut ReassemblyCounters,
        out: &mut F,
    ) where
        F: FnMut(StreamEvent<'_>),
    {
        while self.held_bytes > limits.max_buffered_bytes
            || self.held.len() > limits.max_buffered_segments
        {
            self.give_up_hole(now_ns, counters, out);
        }
    }

    /// Declares the first hole a gap and delivers what was held behind it at its own times.
    fn give_up_hole<F>(&mut self, now_ns: u64, counters: &mut ReassemblyCounters, out: &mut F)
    where
        F: FnMut(StreamEvent<'_>),
    {
        self.skip_to_first_held(counters, out);
        self.drain_held(GIVEN_UP, counters, out);
        if !self.held.is_empty() {
            // The next hole starts now: it gets a full timeout of its own.
            self.hole_since_ns = now_ns;
        }
    }

    fn expire_hole<F>(
        &mut self,
        now_ns: u64,
        limits: &ReassemblyLimits,
        counters: &mut ReassemblyCounters,
        out: &mut F,
    ) where
        F: FnMut(StreamEvent<'_>),
    {
        while !self.held.is_empty()
            && now_ns.saturating_sub(self.hole_since_ns) > limits.hole_timeout_ns
        {
            self.give_up_hole(now_ns, counters, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Ev {
        Data(Vec<u8>, u64),
        Gap(u64),
    }

    struct Harness {
        r: StreamReassembler,
        limits: ReassemblyLimits,
        counters: ReassemblyCounters,
        events: Vec<Ev>,
    }

    impl Harness {
        fn new() -> Self {
            Harness {
                r: StreamReassembler::new(),
                limits: ReassemblyLimits::default(),
                counters: ReassemblyCounters::default(),
                events: Vec::new(),
            }
        }
        fn push(&mut self, seq: u32, data: &[u8], ts: u64) {
            self.push_full(seq, false, data, 0, ts);
        }
        fn push_full(&mut self, seq: u32, syn: bool, data: &[u8], tail: u32, ts: u64) {
            let events = &mut self.events;
            self.r.push(
                seq,
                syn,
                false,
                data,
                tail,
                ts,
                &self.limits,
                &mut self.counters,
                |e| match e {
                    StreamEvent::Data { bytes, times, .. } => {
                        events.push(Ev::Data(bytes.to_vec(), times.readable_ns))
                    }
                    StreamEvent::Gap { bytes } => events.push(Ev::Gap(bytes)),
                },
            );
        }
        fn give_up_acked(&mut self, now_ns: u64) {
            let events = &mut self.events;
            self.r
                .give_up_acked(now_ns, &mut self.counters, |e| match e {
                    StreamEvent::Data { bytes, times, .. } => {
                        events.push(Ev::Data(bytes.to_vec(), times.readable_ns))
                    }
                    StreamEvent::Gap { bytes } => events.push(Ev::Gap(bytes)),
                });
        }
        fn stream(&self) -> Vec<u8> {
            let mut s = Vec::new();
            for e in &self.events {
                if let Ev::Data(d, _) = e {
                    s.extend_from_slice(d);
                }
            }
            s
        }
    }

    #[test]
    fn in_order_with_syn_and_wraparound() {
        let mut h = Harness::new();
        let isn = u32::MAX - 3;
        h.push_full(isn, true, b"", 0, 1);
        h.push(isn.wrapping_add(1), b"abcdef", 2);
        h.push(isn.wrapping_add(7), b"gh", 3);
        assert_eq!(
            h.events,
            vec![Ev::Data(b"abcdef".to_vec(), 2), Ev::Data(b"gh".to_vec(), 3)]
        );
    }

    #[test]
    fn retransmissions_and_overlaps_are_counted_once() {
        let mut h = Harness::new();
        h.push(100, b"abcd", 1);
        h.push(100, b"abcd", 2); // full retransmission
        h.push(102, b"cdef", 3); // overlap of 2
        assert_eq!(h.stream(), b"abcdef");
        assert_eq!(h.counters.retransmitted_bytes, 6);
    }

    #[test]
    fn out_of_order_is_delivered_when_hole_fills_at_fill_time() {
        let mut h = Harness::new();
        h.push(0, b"ab", 1);
        h.push(4, b"ef", 2);
        h.push(6, b"gh", 3);
        assert_eq!(h.stream(), b"ab");
        h.push(2, b"cd", 4);
        assert_eq!(h.stream(), b"abcdefgh");
        assert_eq!(
            h.events[1..],
            [
                Ev::Data(b"cd".to_vec(), 4),
                Ev::Data(b"ef".to_vec(), 4),
                Ev::Data(b"gh".to_vec(), 4)
            ]
        );
        assert_eq!(h.counters.out_of_order_segments, 2);
        assert_eq!(h.counters.gaps, 0);
    }

    /// Bytes held behind a hole are readable when it fills, but keep the capture time of
    /// their own segment: a response among them was on the wire then.
    #[test]
    fn held_bytes_keep_the_time_their_own_segment_was_captured() {
        let mut r = StreamReassembler::new();
        let limits = ReassemblyLimits::default();
        let mut counters = ReassemblyCounters::default();
        let mut got = Vec::new();
        let segments: [(u32, &[u8], u64); 4] =
            [(0, b"ab", 1), (4, b"ef", 2), (6, b"gh", 3), (2, b"cd", 4)];
        for (seq, data, ts) in segments {
            r.push(
                seq,
                false,
                false,
                data,
                0,
                ts,
                &limits,
                &mut counters,
                |e| {
                    if let StreamEvent::Data { bytes, times, .. } = e {
                        got.push((bytes.to_vec(), times.captured_ns, times.readable_ns));
                    }
                },
            );
        }
        let expected: Vec<(Vec<u8>, u64, u64)> =
            [(b"ab", 1, 1), (b"cd", 4, 4), (b"ef", 2, 4), (b"gh", 3, 4)]
                .into_iter()
                .map(|(b, c, t)| (b.to_vec(), c, t))
                .collect();
        assert_eq!(got, expected, "(bytes, captured, readable)");
    }

    #[test]
    fn hole_times_out_into_a_gap() {
        let mut h = Harness::new();
        h.push(0, b"ab", 0);
        h.push(10, b"kl", 1_000);
        assert_eq!(h.stream(), b"ab");
        h.push(12, b"mn", 2_000_000_000);
        assert_eq!(h.events[1], Ev::Gap(8));
        assert_eq!(h.stream(), b"abklmn");
        assert_eq!((h.counters.gaps, h.counters.gap_bytes), (1, 8));
    }

    /// Regression (ring overflow, live): bytes held behind a hole given up on carry their
    /// own capture times, not the time of the give-up (latencies ~1 s too long).
    #[test]
    fn given_up_hole_keeps_the_held_segments_own_times() {
        let mut h = Harness::new();
        h.push(0, b"ab", 0);
        h.push(10, b"kl", 1_000);
        h.push(12, b"mn", 2_000);
        h.push(16, b"qr", 2_000_000_000); // a second hole, 14..16, behind the first
        assert_eq!(
            h.events,
            vec![
                Ev::Data(b"ab".to_vec(), 0),
                Ev::Gap(8),
                Ev::Data(b"kl".to_vec(), 1_000),
                Ev::Data(b"mn".to_vec(), 2_000),
            ]
        );
        // The second hole got a timeout of its own from the give-up on.
        h.push(20, b"uv", 2_900_000_000);
        assert_eq!(h.events.len(), 4);
        h.push(14, b"op", 3_000_000_000); // filled by a retransmission: readable now
        assert_eq!(
            h.events[4..],
            [
                Ev::Data(b"op".to_vec(), 3_000_000_000),
                Ev::Data(b"qr".to_vec(), 3_000_000_000),
            ]
        );
    }

    #[test]
    fn buffer_limit_keeps_the_held_segments_own_times() {
        let mut h = Harness::new();
        h.limits.max_buffered_segments = 2;
        h.push(0, b"a", 0);
        h.push(5, b"f", 1);
        h.push(6, b"g", 2);
        h.push(7, b"h", 3);
        assert_eq!(
            h.events,
            vec![
                Ev::Data(b"a".to_vec(), 0),
                Ev::Gap(4),
                Ev::Data(b"f".to_vec(), 1),
                Ev::Data(b"g".to_vec(), 2),
                Ev::Data(b"h".to_vec(), 3),
            ]
        );
    }

    #[test]
    fn buffer_limit_forces_gap() {
        let mut h = Harness::new();
        h.limits.max_buffered_segments = 2;
        h.push(0, b"a", 0);
        h.push(5, b"f", 1);
        h.push(6, b"g", 2);
        h.push(7, b"h", 3); // third held segment: give up on the hole
        assert_eq!(h.stream(), b"afgh");
        assert_eq!(h.counters.gap_bytes, 4);
    }

    #[test]
    fn snaplen_cut_is_a_gap_of_exact_size() {
        let mut h = Harness::new();
        h.push_full(0, false, b"abc", 5, 1);
        h.push(8, b"xyz", 2);
        assert_eq!(
            h.events,
            vec![
                Ev::Data(b"abc".to_vec(), 1),
                Ev::Gap(5),
                Ev::Data(b"xyz".to_vec(), 2)
            ]
        );
    }

    #[test]
    fn overlapping_held_segments_are_trimmed() {
        let mut h = Harness::new();
        h.push(0, b"a", 0);
        h.push(3, b"defg", 1);
        h.push(2, b"cdefghij", 2); // covers the held one and more
        h.push(1, b"b", 3);
        assert_eq!(h.stream(), b"abcdefghij");
    }

    #[test]
    fn acknowledged_hole_is_a_capture_gap_once_the_window_passed_with_original_times() {
        let mut h = Harness::new();
        h.push(0, b"ab", 1);
        h.push(4, b"ef", 2);
        h.push(8, b"ij", 3);
        // An ACK that does not reach past the hole changes nothing.
        h.r.peer_acked(2);
        assert_eq!(h.r.take_new_deadline(), None);
        // The peer acknowledged up to byte 6: the hole at 2..4 was received. Perhaps the
        // capture host wrote the ACK first: the hole waits the reorder window from the
        // first held segment's time.
        h.r.peer_acked(6);
        assert_eq!(h.r.take_new_deadline(), Some(2 + REORDER_WINDOW_NS));
        assert_eq!(h.r.take_new_deadline(), None, "handed out once");
        h.give_up_acked(2 + REORDER_WINDOW_NS);
        assert_eq!(h.events, vec![Ev::Data(b"ab".to_vec(), 1)]);
        // Past it: the capture dropped those bytes.
        h.give_up_acked(3 + REORDER_WINDOW_NS);
        assert_eq!(
            h.events,
            vec![
                Ev::Data(b"ab".to_vec(), 1),
                Ev::Gap(2),
                Ev::Data(b"ef".to_vec(), 2)
            ]
        );
        assert_eq!((h.counters.gaps, h.counters.gap_bytes), (1, 2));
        // The hole at 6..8 is not acknowledged: it waits for its segment or the timeout.
        assert_eq!(h.r.take_new_deadline(), None);
        assert_eq!(h.r.held_bytes(), 2);
    }

    /// #47: the ACK read before the segment it acknowledges (two tap ports): no gap when
    /// the segment comes within the window, at the time it came.
    #[test]
    fn an_ack_read_before_its_segment_makes_no_gap() {
        let mut h = Harness::new();
        h.push(0, b"ab", 1);
        h.r.peer_acked(6); // read before 2..6, nothing held yet
        assert_eq!(h.r.take_new_deadline(), None);
        h.push(4, b"ef", 3); // held behind a hole the ACK already covers
        assert_eq!(h.r.take_new_deadline(), Some(3 + REORDER_WINDOW_NS));
        h.push(2, b"cd", 2);
        assert_eq!(h.stream(), b"abcdef");
        assert_eq!(h.events[2], Ev::Data(b"ef".to_vec(), 3));
        assert_eq!(h.counters.gaps, 0);
        // Nothing held: a later clock gives nothing up.
        h.give_up_acked(u64::MAX);
        assert_eq!((h.counters.gaps, h.counters.retransmitted_bytes), (0, 0));
        // A hole keeps its deadline while segments of it come; a new one gets its own.
        h.push(10, b"kl", 10);
        h.r.peer_acked(12);
        assert_eq!(h.r.take_new_deadline(), Some(10 + REORDER_WINDOW_NS));
        h.push(8, b"ij", 11);
        assert_eq!(h.r.take_new_deadline(), None, "the same hole, 6..8");
        h.push(6, b"gh", 12);
        assert_eq!(h.stream(), b"abcdefghijkl");
        h.push(14, b"op", 13);
        assert_eq!(h.r.take_new_deadline(), None, "12..14 is not acknowledged");
        h.r.peer_acked(16);
        assert_eq!(h.r.take_new_deadline(), Some(13 + REORDER_WINDOW_NS));
        h.give_up_acked(13 + REORDER_WINDOW_NS + 1);
        assert_eq!(h.stream(), b"abcdefghijklop");
        assert_eq!((h.counters.gaps, h.counters.gap_bytes), (1, 2));
    }

    #[test]
    fn flush_delivers_everything_held() {
        let mut h = Harness::new();
        h.push(0, b"a", 0);
        h.push(3, b"d", 1);
        let events = &mut h.events;
        h.r.flush(&mut h.counters, |e| match e {
            StreamEvent::Data { bytes, times, .. } => {
                events.push(Ev::Data(bytes.to_vec(), times.readable_ns))
            }
            StreamEvent::Gap { bytes } => events.push(Ev::Gap(bytes)),
        });
        assert_eq!(
            h.events,
            vec![
                Ev::Data(b"a".to_vec(), 0),
                Ev::Gap(2),
                Ev::Data(b"d".to_vec(), 1)
            ]
        );
    }
}
