//! TLS records of one direction framed across arbitrary TCP chunks, each with the capture
//! time of the chunk that completed it.

use std::collections::VecDeque;

pub const CHANGE_CIPHER_SPEC: u8 = 20;
pub const ALERT: u8 = 21;
pub const HANDSHAKE: u8 = 22;
pub const APPLICATION_DATA: u8 = 23;

/// The largest record payload any version allows (TLS 1.2: 2^14 + 2048).
pub const MAX_PAYLOAD: usize = (1 << 14) + 2048;

/// A plausible record header: a known content type, version 3.x, a length within limits.
pub fn plausible_header(h: &[u8]) -> bool {
    h.len() >= 5
        && (CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(&h[0])
        && h[1] == 3
        && h[2] <= 4
        && u16::from_be_bytes([h[3], h[4]]) as usize <= MAX_PAYLOAD
}

/// Where a complete record lies in [`RecordReader::buffered_mut`], and when it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordAt {
    pub header: [u8; 5],
    /// The payload's range in the buffered bytes.
    pub payload_start: usize,
    pub payload_end: usize,
    /// The capture time of the chunk that brought the record's last byte.
    pub ts_ns: u64,
}

/// One direction's bytes not yet taken as records.
#[derive(Debug, Default)]
pub struct RecordReader {
    buf: Vec<u8>,
    /// How far into `buf` records were taken.
    start: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Each chunk pushed and not yet wholly taken: (stream offset after its last byte, its
    /// time), oldest first.
    arrivals: VecDeque<(u64, u64)>,
}

impl RecordReader {
    /// In-order stream bytes that arrived at `ts_ns`.
    pub fn push(&mut self, bytes: &[u8], ts_ns: u64) {
        if bytes.is_empty() {
            return;
        }
        if self.start > 0 && self.start == self.buf.len() {
            self.base += self.start as u64;
            self.buf.clear();
            self.start = 0;
        } else if self.start > (64 << 10) {
            // Compact now and then, not at every record.
            self.base += self.start as u64;
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
        self.arrivals
            .push_back((self.base + self.buf.len() as u64, ts_ns));
    }

    /// Bytes waiting, not yet taken as records.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Mutable access for decryption in place (ranges from [`RecordReader::peek`]).
    pub fn buffered_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The next record if all of it arrived (the header is not checked: see
    /// [`plausible_header`]).
    pub fn peek(&self) -> Option<RecordAt> {
        self.peek_at(0)
    }

    /// [`RecordReader::peek`] as if the first `skip` pending bytes were gone.
    pub fn peek_at(&self, skip: usize) -> Option<RecordAt> {
        let at = self.start + skip;
        let h: [u8; 5] = self.buf.get(at..at + 5)?.try_into().ok()?;
        let len = u16::from_be_bytes([h[3], h[4]]) as usize;
        let end = at + 5 + len;
        if end > self.buf.len() {
            return None;
        }
        let end_offset = self.base + end as u64;
        let ts_ns = self
            .arrivals
            .iter()
            .find(|&&(until, _)| until >= end_offset)
            .map_or(0, |&(_, ts)| ts);
        Some(RecordAt {
            header: h,
            payload_start: at + 5,
            payload_end: end,
            ts_ns,
        })
    }

    /// Takes `n` pending bytes (a record, or bytes skipped while resynchronising).
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
        let taken = self.base + self.start as u64;
        while self
            .arrivals
            .front()
            .is_some_and(|&(until, _)| until <= taken)
        {
            self.arrivals.pop_front();
        }
    }

    /// Forgets everything pending (a capture hole: what follows is not contiguous).
    pub fn clear(&mut self) {
        self.base += self.buf.len() as u64;
        self.buf.clear();
        self.start = 0;
        self.arrivals.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(kind: u8, len: usize, fill: u8) -> Vec<u8> {
        let mut r = vec![kind, 3, 3];
        r.extend_from_slice(&(len as u16).to_be_bytes());
        r.extend(std::iter::repeat_n(fill, len));
        r
    }

    /// Every record taken with its payload and the time of the chunk holding its last byte.
    fn take_all(reader: &mut RecordReader, out: &mut Vec<(Vec<u8>, u64)>) {
        while let Some(r) = reader.peek() {
            let payload = reader.buffered_mut()[r.payload_start..r.payload_end].to_vec();
            out.push((payload, r.ts_ns));
            reader.consume(5 + r.payload_end - r.payload_start);
        }
    }

    proptest! {
        /// However the stream is cut into chunks, the same records come out, each timed by
        /// the chunk that carried its last byte.
        #[test]
        fn records_across_any_chunking(
            lens in proptest::collection::vec(0usize..300, 1..8),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let stream: Vec<u8> = lens.iter().enumerate()
                .flat_map(|(i, &l)| record(APPLICATION_DATA, l, i as u8))
                .collect();
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
            cuts.push(0);
            cuts.push(stream.len());
            cuts.sort();
            cuts.dedup();
            let mut reader = RecordReader::default();
            let mut got = Vec::new();
            for (chunk, w) in cuts.windows(2).enumerate() {
                reader.push(&stream[w[0]..w[1]], 1000 + chunk as u64);
                take_all(&mut reader, &mut got);
            }
            // The truth: where each record ends, and which chunk holds that byte.
            let mut end = 0;
            for (i, &l) in lens.iter().enumerate() {
                end += 5 + l;
                let chunk = cuts.windows(2).position(|w| w[0] < end && end <= w[1]).unwrap();
                prop_assert_eq!(&got[i].0, &vec![i as u8; l]);
                prop_assert_eq!(got[i].1, 1000 + chunk as u64);
            }
            prop_assert_eq!(got.len(), lens.len());
            prop_assert!(reader.pending().is_empty());
        }
    }

    #[test]
    fn a_record_at_every_byte_boundary() {
        let stream = [record(23, 40, 1), record(23, 3, 2), record(22, 0, 0)].concat();
        for cut in 0..=stream.len() {
            let mut reader = RecordReader::default();
            let mut got = Vec::new();
            reader.push(&stream[..cut], 1);
            take_all(&mut reader, &mut got);
            reader.push(&stream[cut..], 2);
            take_all(&mut reader, &mut got);
            let times: Vec<u64> = got.iter().map(|g| g.1).collect();
            let expect: Vec<u64> = [45, 53, 58]
                .iter()
                .map(|&end| if end <= cut { 1 } else { 2 })
                .collect();
            assert_eq!(times, expect, "cut at {cut}");
        }
    }
}
