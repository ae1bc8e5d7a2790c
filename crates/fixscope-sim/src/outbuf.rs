//! Send buffer: messages due together are appended and sent with one write(); each message
//! can carry a tag that is stamped with the time taken just before the write() that sent its
//! last byte.

use std::io::{self, Write};

use fixscope_core::clock::monotonic_ns;

/// Compact a blocked buffer once this many sent bytes sit at its front.
const COMPACT_AT: usize = 1 << 20;
/// Write attempts per flush (a socket that keeps accepting partial writes is still bounded).
const MAX_WRITES_PER_FLUSH: usize = 64;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Flushed {
    /// Everything was written.
    Done,
    /// The socket is full; wait for EPOLLOUT.
    Blocked,
}

#[derive(Default)]
pub struct OutBuf {
    buf: Vec<u8>,
    pos: usize,
    /// `(end offset in buf, tag)`, in offset order; entries before `head` are done.
    stamps: Vec<(usize, u64)>,
    head: usize,
}

impl OutBuf {
    pub fn with_capacity(bytes: usize, stamps: usize) -> Self {
        OutBuf {
            buf: Vec::with_capacity(bytes),
            pos: 0,
            stamps: Vec::with_capacity(stamps),
            head: 0,
        }
    }

    /// The buffer to append encoded messages to.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Tags the bytes appended so far (i.e. the last message) with `tag`.
    pub fn stamp(&mut self, tag: u64) {
        self.stamps.push((self.buf.len(), tag));
    }

    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Writes what is pending; calls `on_sent(tag, ts, done)` for each tagged message fully
    /// written, `ts` being CLOCK_MONOTONIC just before the write() that completed it and
    /// `done` just after that write() returned.
    pub fn flush<W: Write, F: FnMut(u64, u64, u64)>(
        &mut self,
        w: &mut W,
        mut on_sent: F,
    ) -> io::Result<Flushed> {
        for _ in 0..MAX_WRITES_PER_FLUSH {
            if self.pos == self.buf.len() {
                self.clear();
                return Ok(Flushed::Done);
            }
            let ts = monotonic_ns();
            match w.write(&self.buf[self.pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    let done = monotonic_ns();
                    self.pos += n;
                    while self.head < self.stamps.len() && self.stamps[self.head].0 <= self.pos {
                        on_sent(self.stamps[self.head].1, ts, done);
                        self.head += 1;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.compact();
                    return Ok(Flushed::Blocked);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.compact();
        Ok(if self.pos == self.buf.len() {
            self.clear();
            Flushed::Done
        } else {
            Flushed::Blocked
        })
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.stamps.clear();
        self.head = 0;
    }

    fn compact(&mut self) {
        if self.pos < COMPACT_AT {
            return;
        }
        let sent = self.pos;
        self.buf.drain(..sent);
        self.pos = 0;
        self.stamps.drain(..self.head);
        self.head = 0;
        for s in &mut self.stamps {
            s.0 -= sent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts at most `cap` bytes per write, then WouldBlock once `budget` is used up.
    struct Slow {
        got: Vec<u8>,
        cap: usize,
        budget: usize,
    }

    impl Write for Slow {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = b.len().min(self.cap).min(self.budget);
            self.budget -= n;
            self.got.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn stamps_only_fully_written_messages() {
        let mut ob = OutBuf::with_capacity(64, 4);
        ob.buf().extend_from_slice(b"aaaa");
        ob.stamp(1);
        ob.buf().extend_from_slice(b"bbbb");
        ob.stamp(2);
        let mut w = Slow {
            got: Vec::new(),
            cap: 3,
            budget: 6,
        };
        let mut sent = Vec::new();
        assert_eq!(
            ob.flush(&mut w, |t, _, _| sent.push(t)).unwrap(),
            Flushed::Blocked
        );
        assert_eq!(sent, vec![1]);
        w.budget = 100;
        assert_eq!(
            ob.flush(&mut w, |t, _, _| sent.push(t)).unwrap(),
            Flushed::Done
        );
        assert_eq!(sent, vec![1, 2]);
        assert_eq!(w.got, b"aaaabbbb");
        assert_eq!(ob.pending(), 0);
    }
}
