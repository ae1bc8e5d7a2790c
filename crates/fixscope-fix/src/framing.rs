//! Cutting a TCP byte stream into FIX messages by BeginString (8), BodyLength (9) and
//! CheckSum (10).
//!
//! [`frame_one`] looks at the start of a buffer and says whether a whole message is there;
//! [`StreamFramer`] keeps the partial message between segments of one TCP direction and
//! tracks which segment's timestamp carried a message's first and last byte.

use memchr::memmem;

use super::{checksum, SOH};

/// Longest BeginString value we accept ("FIXT.1.1" is 8 bytes; leave room for odd ones).
const MAX_BEGIN_STRING: usize = 16;
/// Longest BodyLength value in digits.
const MAX_BODY_LENGTH_DIGITS: usize = 7;
/// Messages above this body length are treated as garbage rather than waited for.
pub const MAX_BODY_LENGTH: usize = 1 << 20;
/// Length of the trailer `10=NNN<SOH>`.
const TRAILER_LEN: usize = 7;

/// What the start of a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole message of `len` bytes; `checksum_ok` says whether its CheckSum matches.
    Message { len: usize, checksum_ok: bool },
    /// A message that may still be completed; `total_len` once the header was readable.
    NeedMore { total_len: Option<usize> },
    /// Not a message here: skip at least `skip` bytes and look for the next `8=FIX`.
    Invalid { skip: usize, reason: InvalidReason },
}

/// Why the bytes at the start of a buffer are not a FIX message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidReason {
    /// Does not start with `8=FIX…<SOH>9=`.
    BadHeader,
    /// BodyLength does not land on a `10=NNN<SOH>` trailer.
    BadBodyLength,
}

/// Parses the message at the start of `buf`.
pub fn frame_one(buf: &[u8]) -> Frame {
    const NEED_MORE: Frame = Frame::NeedMore { total_len: None };
    const BAD_HEADER: Frame = Frame::Invalid {
        skip: 1,
        reason: InvalidReason::BadHeader,
    };
    // "8=FIX"
    let prefix = b"8=FIX";
    let n = buf.len().min(prefix.len());
    if buf[..n] != prefix[..n] {
        return BAD_HEADER;
    }
    if buf.len() < prefix.len() {
        return NEED_MORE;
    }
    // BeginString value up to SOH.
    let Some(begin_end) =
        super::message::find_soh(&buf[2..buf.len().min(2 + MAX_BEGIN_STRING + 1)]).map(|p| p + 2)
    else {
        return if buf.len() < 2 + MAX_BEGIN_STRING + 1 {
            NEED_MORE
        } else {
            BAD_HEADER
        };
    };
    // "9=" digits SOH
    let mut i = begin_end + 1;
    for &expected in b"9=" {
        match buf.get(i) {
            None => return NEED_MORE,
            Some(&b) if b == expected => i += 1,
            Some(_) => return BAD_HEADER,
        }
    }
    let digits_start = i;
    let mut body_len: usize = 0;
    loop {
        match buf.get(i) {
            None => return NEED_MORE,
            Some(&b) if b.is_ascii_digit() => {
                if i - digits_start >= MAX_BODY_LENGTH_DIGITS {
                    return BAD_HEADER;
                }
                body_len = body_len * 10 + (b - b'0') as usize;
                i += 1;
            }
            Some(&SOH) if i > digits_start => break,
            Some(_) => return BAD_HEADER,
        }
    }
    if body_len > MAX_BODY_LENGTH {
        return BAD_HEADER;
    }
    let body_start = i + 1;
    let body_end = body_start + body_len;
    let total_len = body_end + TRAILER_LEN;
    if buf.len() < total_len {
        return Frame::NeedMore {
            total_len: Some(total_len),
        };
    }
    let trailer = &buf[body_end..total_len];
    let digits_ok = trailer[3..6].iter().all(u8::is_ascii_digit);
    if &trailer[..3] != b"10=" || !digits_ok || trailer[6] != SOH {
        return Frame::Invalid {
            skip: 1,
            reason: InvalidReason::BadBodyLength,
        };
    }
    let declared = (trailer[3] - b'0') as u32 * 100
        + (trailer[4] - b'0') as u32 * 10
        + (trailer[5] - b'0') as u32;
    Frame::Message {
        len: total_len,
        checksum_ok: declared == checksum(&buf[..body_end]) as u32,
    }
}

/// Offset of the next possible message start (`8=FIX`) in `buf`, or of a trailing partial
/// `8=FI` that could become one when more bytes arrive.
pub fn find_begin(buf: &[u8]) -> Option<usize> {
    if let Some(p) = memmem::find(buf, b"8=FIX") {
        return Some(p);
    }
    // A prefix of "8=FIX" at the very end must be kept for the next segment.
    let tail_start = buf.len().saturating_sub(4);
    (tail_start..buf.len()).find(|&p| b"8=FIX".starts_with(&buf[p..]))
}

pub use fixscope_model::counters::framing::FramingCounters;

use fixscope_protocol::ByteTimes;
/// A complete message with its first and last bytes' times: the seam's, every protocol's.
pub use fixscope_protocol::FramedMessage;

/// Bytes from `start` on (up to the next run) came with `times`, the first of them with
/// TCP sequence number `seq` (a run is contiguous in the stream).
#[derive(Clone, Copy, Debug)]
struct Run {
    start: usize,
    times: ByteTimes,
    seq: u32,
}

/// The times of the byte at `offset`, given runs sorted by start with the first at 0.
#[inline]
fn times_at(runs: &[Run], offset: usize) -> ByteTimes {
    match runs {
        [only] => only.times,
        _ => runs
            .iter()
            .rev()
            .find(|r| r.start <= offset)
            .map_or(ByteTimes::at(0), |r| r.times),
    }
}

/// The sequence number of the byte at `offset`, given runs as for [`times_at`].
#[inline]
fn seq_at(runs: &[Run], offset: usize) -> u32 {
    let run = match runs {
        [only] => Some(only),
        _ => runs.iter().rev().find(|r| r.start <= offset),
    };
    run.map_or(0, |r| r.seq.wrapping_add((offset - r.start) as u32))
}

/// Frames one direction of one TCP connection.
#[derive(Debug, Default)]
pub struct StreamFramer {
    /// Bytes of a message that began in an earlier segment.
    partial: Vec<u8>,
    /// Where in `partial` the bytes of each segment begin, with that segment's time (the
    /// first at 0): when a held start turns out not to be a message, the messages found in
    /// the bytes held keep the times of the segments that really carried them.
    partial_runs: Vec<Run>,
    /// True after a gap or garbage: bytes are dropped until the next `8=FIX`.
    hunting: bool,
}

impl StreamFramer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets any partial message and looks for the next `8=FIX` (after a TCP gap).
    pub fn resync(&mut self) {
        self.partial.clear();
        self.partial_runs.clear();
        self.hunting = true;
    }

    /// A TCP gap: the message begun before it (if any) can never be completed — counted and
    /// dropped, never glued to bytes after the gap; framing resyncs at the next `8=FIX`.
    pub fn gap(&mut self, counters: &mut FramingCounters) {
        if !self.partial.is_empty() {
            counters.gap_cut_messages += 1;
        }
        self.resync();
    }

    /// Bytes held for a message not yet complete.
    pub fn pending_bytes(&self) -> usize {
        self.partial.len()
    }

    /// Feeds in-order stream bytes that arrived at `ts_ns`; calls `on_message` for every
    /// message completed by them (checksum failures are counted, not delivered).
    pub fn push<F>(
        &mut self,
        data: &[u8],
        ts_ns: u64,
        counters: &mut FramingCounters,
        on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        self.push_at(data, ts_ns, 0, counters, on_message)
    }

    /// [`StreamFramer::push`] of bytes whose first has TCP sequence number `seq`, so messages
    /// carry their bytes' sequence numbers.
    #[inline]
    pub fn push_at<F>(
        &mut self,
        data: &[u8],
        ts_ns: u64,
        seq: u32,
        counters: &mut FramingCounters,
        on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        self.push_times(data, ByteTimes::at(ts_ns), seq, counters, on_message)
    }

    /// [`StreamFramer::push_at`] of bytes whose capture and readable times differ (held
    /// behind a hole): messages start at the first and end at the second.
    pub fn push_times<F>(
        &mut self,
        mut data: &[u8],
        times: ByteTimes,
        mut seq: u32,
        counters: &mut FramingCounters,
        mut on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        // 1. Complete a message that began in an earlier segment.
        while !self.partial.is_empty() && !data.is_empty() {
            let take = match frame_one(&self.partial) {
                Frame::NeedMore {
                    total_len: Some(total),
                } => total - self.partial.len(),
                // Header not complete yet: take enough to read it.
                Frame::NeedMore { total_len: None } => 32,
                Frame::Message { .. } | Frame::Invalid { .. } => 0,
            }
            .min(data.len());
            if take > 0 {
                self.partial_runs.push(Run {
                    start: self.partial.len(),
                    times,
                    seq,
                });
            }
            self.partial.extend_from_slice(&data[..take]);
            data = &data[take..];
            seq = seq.wrapping_add(take as u32);
            match frame_one(&self.partial) {
                Frame::NeedMore { .. } => {}
                Frame::Message { len, checksum_ok } => {
                    counters.messages += 1;
                    if checksum_ok {
                        on_message(FramedMessage {
                            bytes: &self.partial[..len],
                            first_byte_ts_ns: times_at(&self.partial_runs, 0).captured_ns,
                            last_byte_ts_ns: times_at(&self.partial_runs, len - 1).readable_ns,
                            first_byte_seq: seq_at(&self.partial_runs, 0),
                            last_byte_seq: seq_at(&self.partial_runs, len - 1),
                        });
                    } else {
                        counters.bad_checksum += 1;
                    }
                    if len == self.partial.len() {
                        self.partial.clear();
                        self.partial_runs.clear();
                    } else {
                        // The header was completed with a guess of 32 bytes, which took
                        // the start of what follows a short message: frame that too.
                        let held = std::mem::take(&mut self.partial);
                        let mut runs = std::mem::take(&mut self.partial_runs);
                        rebase_runs(&mut runs, len);
                        self.push_fresh(&held[len..], &runs, counters, &mut on_message);
                    }
                }
                Frame::Invalid { skip, reason } => {
                    count_invalid(counters, reason);
                    // Re-scan what we held (minus the bad start) together with the rest,
                    // each byte with the time of the segment that carried it.
                    let held = std::mem::take(&mut self.partial);
                    let mut runs = std::mem::take(&mut self.partial_runs);
                    counters.skipped_bytes += skip as u64;
                    self.hunting = true;
                    rebase_runs(&mut runs, skip);
                    self.push_fresh(&held[skip..], &runs, counters, &mut on_message);
                }
            }
        }
        if !data.is_empty() {
            let runs = [Run {
                start: 0,
                times,
                seq,
            }];
            self.push_fresh(data, &runs, counters, &mut on_message);
        }
    }

    /// Frames `data` when no partial message is held (the zero-copy path); `runs` tell
    /// when each byte arrived (one run but after an invalid held start).
    fn push_fresh<F>(
        &mut self,
        mut data: &[u8],
        runs: &[Run],
        counters: &mut FramingCounters,
        on_message: &mut F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        debug_assert!(self.partial.is_empty());
        let total = data.len();
        while !data.is_empty() {
            if self.hunting || !data.starts_with(b"8") {
                match find_begin(data) {
                    Some(p) => {
                        counters.skipped_bytes += p as u64;
                        data = &data[p..];
                        self.hunting = false;
                    }
                    None => {
                        counters.skipped_bytes += data.len() as u64;
                        self.hunting = true;
                        return;
                    }
                }
            }
            match frame_one(data) {
                Frame::Message { len, checksum_ok } => {
                    counters.messages += 1;
                    if checksum_ok {
                        let at = total - data.len();
                        on_message(FramedMessage {
                            bytes: &data[..len],
                            first_byte_ts_ns: times_at(runs, at).captured_ns,
                            last_byte_ts_ns: times_at(runs, at + len - 1).readable_ns,
                            first_byte_seq: seq_at(runs, at),
                            last_byte_seq: seq_at(runs, at + len - 1),
                        });
                    } else {
                        counters.bad_checksum += 1;
                    }
                    data = &data[len..];
                }
                Frame::NeedMore { .. } => {
                    let at = total - data.len();
                    self.partial.extend_from_slice(data);
                    self.partial_runs.extend_from_slice(runs);
                    rebase_runs(&mut self.partial_runs, at);
                    return;
                }
                Frame::Invalid { skip, reason } => {
                    count_invalid(counters, reason);
                    counters.skipped_bytes += skip as u64;
                    data = &data[skip..];
                    self.hunting = true;
                }
            }
        }
    }
}

/// Runs of bytes from which the first `skip` were dropped: the one holding byte `skip`
/// now starts at 0, earlier ones go.
fn rebase_runs(runs: &mut Vec<Run>, skip: usize) {
    let keep_from = runs.iter().rposition(|r| r.start <= skip).unwrap_or(0);
    runs.drain(..keep_from);
    for r in runs.iter_mut() {
        if r.start < skip {
            // The run holding byte `skip` now starts there: its sequence moves with it.
            r.seq = r.seq.wrapping_add((skip - r.start) as u32);
        }
        r.start = r.start.saturating_sub(skip);
    }
}

fn count_invalid(counters: &mut FramingCounters, reason: InvalidReason) {
    if reason == InvalidReason::BadBodyLength {
        counters.bad_body_length += 1;
    }
}

/// FIX on the seam: the framer's contract (fixscope_protocol::contract) is its own.
impl fixscope_protocol::Framer for StreamFramer {
    #[inline]
    fn push_at<F>(
        &mut self,
        data: &[u8],
        times: ByteTimes,
        seq: u32,
        counters: &mut FramingCounters,
        on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        StreamFramer::push_times(self, data, times, seq, counters, on_message)
    }

    fn gap(&mut self, counters: &mut FramingCounters) {
        StreamFramer::gap(self, counters)
    }

    fn pending_bytes(&self) -> usize {
        StreamFramer::pending_bytes(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::FixEncoder;

    fn order(clordid: &str) -> Vec<u8> {
        let mut out = Vec::new();
        FixEncoder::new()
            .start(b"D")
            .field_str(49, "CLIENT")
            .field_str(56, "EXCH")
            .field_str(11, clordid)
            .field_str(55, "AAPL")
            .finish(b"FIX.4.4", &mut out);
        out
    }

    fn collect(framer: &mut StreamFramer, chunks: &[(&[u8], u64)]) -> Vec<(Vec<u8>, u64, u64)> {
        let mut counters = FramingCounters::default();
        let mut out = Vec::new();
        for &(data, ts) in chunks {
            framer.push(data, ts, &mut counters, |m| {
                out.push((m.bytes.to_vec(), m.first_byte_ts_ns, m.last_byte_ts_ns))
            });
        }
        out
    }

    #[test]
    fn frames_whole_message() {
        let m = order("A1");
        assert_eq!(
            frame_one(&m),
            Frame::Message {
                len: m.len(),
                checksum_ok: true
            }
        );
        for cut in 0..m.len() {
            assert!(
                matches!(frame_one(&m[..cut]), Frame::NeedMore { .. }),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn detects_bad_checksum_and_body_length() {
        let mut m = order("A1");
        let n = m.len();
        m[n - 2] = if m[n - 2] == b'9' { b'0' } else { m[n - 2] + 1 };
        assert_eq!(
            frame_one(&m),
            Frame::Message {
                len: n,
                checksum_ok: false
            }
        );
        let mut framer = StreamFramer::new();
        let mut counters = FramingCounters::default();
        framer.push(&m, 1, &mut counters, |_| panic!("bad checksum delivered"));
        assert_eq!(counters.bad_checksum, 1);

        let m = order("A1");
        let text = String::from_utf8(m).unwrap();
        let body_len: usize = text.split('\x01').nth(1).unwrap()[2..].parse().unwrap();
        let wrong = text.replacen(&format!("9={body_len}"), &format!("9={}", body_len + 1), 1);
        assert!(matches!(
            frame_one(wrong.as_bytes()),
            Frame::Invalid {
                reason: InvalidReason::BadBodyLength,
                ..
            } | Frame::NeedMore { .. }
        ));
    }

    #[test]
    fn split_anywhere_keeps_first_and_last_byte_times() {
        let m = order("CLORD-123456789012345678901234567890");
        for cut in 1..m.len() {
            let mut framer = StreamFramer::new();
            let got = collect(&mut framer, &[(&m[..cut], 10), (&m[cut..], 20)]);
            assert_eq!(got, vec![(m.clone(), 10, 20)], "cut at {cut}");
        }
    }

    #[test]
    fn split_in_three_uses_first_and_last_segment() {
        let m = order("X");
        let mut framer = StreamFramer::new();
        let got = collect(&mut framer, &[(&m[..3], 1), (&m[3..20], 2), (&m[20..], 3)]);
        assert_eq!(got, vec![(m, 1, 3)]);
    }

    #[test]
    fn many_messages_per_segment_and_garbage_between() {
        let (a, b, c) = (order("A"), order("B"), order("C"));
        let mut stream = a.clone();
        stream.extend_from_slice(b"garbage\x01 8=O junk");
        stream.extend_from_slice(&b);
        stream.extend_from_slice(&c[..10]);
        let mut framer = StreamFramer::new();
        let mut counters = FramingCounters::default();
        let mut got = Vec::new();
        framer.push(&stream, 5, &mut counters, |m| got.push(m.bytes.to_vec()));
        framer.push(&c[10..], 6, &mut counters, |m| got.push(m.bytes.to_vec()));
        assert_eq!(got, vec![a, b, c]);
        assert_eq!(counters.messages, 3);
        assert_eq!(counters.skipped_bytes, "garbage\x01 8=O junk".len() as u64);
    }

    #[test]
    fn resync_after_gap_drops_partial_and_finds_next_message() {
        let (a, b) = (order("A"), order("B"));
        let mut framer = StreamFramer::new();
        let mut counters = FramingCounters::default();
        let mut got = Vec::new();
        framer.push(&a[..30], 1, &mut counters, |m| got.push(m.bytes.to_vec()));
        framer.resync();
        let mut rest = a[40..].to_vec();
        rest.extend_from_slice(&b);
        framer.push(&rest, 2, &mut counters, |m| got.push(m.bytes.to_vec()));
        assert_eq!(got, vec![b]);
    }

    #[test]
    fn begin_prefix_split_across_segments() {
        let b = order("B");
        let mut stream = b"junk8=F".to_vec();
        let mut framer = StreamFramer::new();
        framer.resync();
        let mut counters = FramingCounters::default();
        let mut got = Vec::new();
        framer.push(&stream, 1, &mut counters, |m| got.push(m.bytes.to_vec()));
        stream = b[3..].to_vec();
        framer.push(&stream, 2, &mut counters, |m| got.push(m.bytes.to_vec()));
        assert_eq!(got, vec![b]);
    }

    #[test]
    fn absurd_body_length_is_garbage_not_a_wait() {
        assert!(matches!(
            frame_one(b"8=FIX.4.4\x019=99999999\x01"),
            Frame::Invalid { .. }
        ));
        assert!(matches!(
            frame_one(b"8=FIX.4.4\x019=2000000\x01"),
            Frame::Invalid { .. }
        ));
    }

    /// Regression (fuzz target `fix`): a held start whose BodyLength lies is re-scanned;
    /// a message found in the bytes held keeps the time of the segment that carried it,
    /// not that of the bogus start (a response stamped early is a latency too short).
    #[test]
    fn message_inside_an_invalid_held_start_keeps_its_own_time() {
        let bogus = b"8=FIX.4.4\x019=49\x0135=D\x01";
        let mut heartbeat = Vec::new();
        FixEncoder::new()
            .start(b"0")
            .finish(b"FIX.4.4", &mut heartbeat);
        let mut second = heartbeat.clone();
        second.extend_from_slice(&[b'x'; 60]);
        let mut framer = StreamFramer::new();
        let out = collect(&mut framer, &[(bogus, 1), (&second, 2)]);
        assert_eq!(out, vec![(heartbeat, 2, 2)]);
    }

    /// Regression (fuzz target `fix`): a header cut after BeginString is completed by
    /// reading 32 more bytes; when the message is shorter than that, the bytes taken past
    /// its end are the next message's start and must be framed, not dropped with it.
    #[test]
    fn short_message_completed_from_a_cut_header_keeps_the_next() {
        let mut heartbeat = Vec::new();
        FixEncoder::new()
            .start(b"0")
            .finish(b"FIX.4.4", &mut heartbeat);
        assert!(heartbeat.len() < 10 + 32);
        let next = order("B2");
        let mut second = heartbeat[10..].to_vec();
        second.extend_from_slice(&next);
        let mut framer = StreamFramer::new();
        let out = collect(&mut framer, &[(&heartbeat[..10], 1), (&second, 2)]);
        assert_eq!(out, vec![(heartbeat, 1, 2), (next, 2, 2)]);
    }

    /// Frames `stream` cut at `cuts`, each chunk pushed with the sequence number of its
    /// first byte (from `isn`, wrapping); returns each message's (stream offset of its
    /// first byte, first seq, last seq).
    fn seqs_of(stream: &[u8], cuts: &[usize], isn: u32) -> Vec<(usize, u32, u32)> {
        let mut framer = StreamFramer::new();
        let mut counters = FramingCounters::default();
        let mut out = Vec::new();
        // Messages come in stream order: each is found after the previous one.
        let mut cursor = 0;
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(stream.len());
        for w in bounds.windows(2) {
            let (from, to) = (w[0], w[1]);
            let seq = isn.wrapping_add(from as u32);
            framer.push_at(&stream[from..to], 1, seq, &mut counters, |m| {
                let at = cursor
                    + memmem::find(&stream[cursor..], m.bytes)
                        .expect("framed bytes are the stream's");
                cursor = at + m.bytes.len();
                out.push((at, m.first_byte_seq, m.last_byte_seq));
            });
        }
        out
    }

    /// `--breakdown` places socket calls by these: every message's first and last byte
    /// carry their exact sequence numbers, however the stream is cut — across segments,
    /// after an invalid held start is re-scanned, after a short message completed from a
    /// cut header — and across the 32-bit wrap.
    #[test]
    fn messages_carry_the_sequence_numbers_of_their_first_and_last_byte() {
        let (a, b) = (order("A1"), order("B22"));
        let mut heartbeat = Vec::new();
        FixEncoder::new()
            .start(b"0")
            .finish(b"FIX.4.4", &mut heartbeat);
        let bogus = b"8=FIX.4.4\x019=49\x0135=D\x01".to_vec();
        let mut stream = a.clone();
        stream.extend_from_slice(&heartbeat);
        stream.extend_from_slice(&b);
        stream.extend_from_slice(&bogus);
        stream.extend_from_slice(&heartbeat);
        stream.extend_from_slice(&[b'x'; 60]);
        stream.extend_from_slice(&order("C333"));
        let check = |cuts: &[usize], isn: u32| {
            let got = seqs_of(&stream, cuts, isn);
            assert_eq!(got.len(), 5, "cuts {cuts:?}: {got:?}");
            for (at, first, last) in got {
                let len = frame_len(&stream[at..]);
                assert_eq!(first, isn.wrapping_add(at as u32), "cuts {cuts:?} at {at}");
                assert_eq!(
                    last,
                    isn.wrapping_add((at + len - 1) as u32),
                    "cuts {cuts:?}"
                );
            }
        };
        for cut in 1..stream.len() {
            check(&[cut], 1_000);
            check(&[cut], u32::MAX - (cut as u32 / 2));
        }
        for cut in (1..stream.len()).step_by(7) {
            check(&[cut / 2, cut], 7);
        }
    }

    fn frame_len(buf: &[u8]) -> usize {
        match frame_one(buf) {
            Frame::Message { len, .. } => len,
            other => panic!("not a message: {other:?}"),
        }
    }
}
