//! Receive buffer: bytes are read straight into its tail and framed in place, so a
//! message is never copied unless it straddles two reads (then only the tail is moved).

use std::io::{self, Read};

use fixscope_core::fix::framing::{find_begin, frame_one, Frame, MAX_BODY_LENGTH};

pub enum ReadOutcome {
    Data,
    WouldBlock,
    Closed,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct FramingStats {
    pub bad_checksum: u64,
    pub skipped_bytes: u64,
}

pub struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes the last successful read() returned (they end at `end` until `drain`).
    last: usize,
}

impl InBuf {
    pub fn with_capacity(n: usize) -> Self {
        InBuf {
            buf: vec![0; n.max(1024)],
            start: 0,
            end: 0,
            last: 0,
        }
    }

    /// A zero-capacity stand-in (does not allocate).
    pub fn empty() -> Self {
        InBuf {
            buf: Vec::new(),
            start: 0,
            end: 0,
            last: 0,
        }
    }

    /// One read() into the free tail.
    pub fn read_from<R: Read>(&mut self, r: &mut R) -> io::Result<ReadOutcome> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                // One message bigger than the buffer: grow (rare; bounded by framing).
                let new_len = (self.buf.len() * 2).min(MAX_BODY_LENGTH + 4096);
                if new_len <= self.buf.len() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "message too large",
                    ));
                }
                self.buf.resize(new_len, 0);
            }
        }
        loop {
            match r.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(ReadOutcome::Closed),
                Ok(n) => {
                    self.end += n;
                    self.last = n;
                    return Ok(ReadOutcome::Data);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(ReadOutcome::WouldBlock)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The bytes the last read() returned (call before `drain`, which may reuse them).
    pub fn last_read(&self) -> &[u8] {
        &self.buf[self.end - self.last.min(self.end)..self.end]
    }

    /// Free bytes at the tail before the next read would have to compact.
    pub fn free_tail(&self) -> usize {
        self.buf.len() - self.end
    }

    /// Calls `on_message` for every complete message with a valid checksum; keeps a
    /// trailing partial message for the next read. Garbage is skipped to the next `8=FIX`.
    pub fn drain<F: FnMut(&[u8])>(&mut self, stats: &mut FramingStats, mut on_message: F) {
        let mut pos = self.start;
        while pos < self.end {
            let data = &self.buf[pos..self.end];
            match frame_one(data) {
                Frame::Message { len, checksum_ok } => {
                    if checksum_ok {
                        on_message(&data[..len]);
                    } else {
                        stats.bad_checksum += 1;
                    }
                    pos += len;
                }
                Frame::NeedMore { .. } => break,
                Frame::Invalid { skip, .. } => {
                    let rest = &data[skip..];
                    let jump = skip + find_begin(rest).unwrap_or(rest.len());
                    stats.skipped_bytes += jump as u64;
                    pos += jump;
                }
            }
        }
        if pos == self.end {
            self.start = 0;
            self.end = 0;
        } else {
            self.start = pos;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixscope_core::fix::encode::FixEncoder;

    #[test]
    fn frames_across_reads_and_skips_garbage() {
        let mut m = Vec::new();
        let mut enc = FixEncoder::new();
        for id in ["A", "B"] {
            enc.start(b"D").field_str(11, id);
            enc.finish(b"FIX.4.4", &mut m);
        }
        let mut stream = b"junk".to_vec();
        stream.extend_from_slice(&m);
        let mut ib = InBuf::with_capacity(16);
        let mut got = Vec::new();
        let mut stats = FramingStats::default();
        for chunk in stream.chunks(7) {
            let mut r = chunk;
            while !r.is_empty() {
                if let Ok(ReadOutcome::Data) = ib.read_from(&mut r) {
                    ib.drain(&mut stats, |msg| got.push(msg.to_vec()));
                }
            }
        }
        assert_eq!(got.concat(), m);
        assert_eq!(stats.skipped_bytes, 4);
    }
}
