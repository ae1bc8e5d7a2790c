//! One TCP connection of the router (a client session or the venue session): its socket,
//! receive buffer, FIX session, and a send buffer whose writes are stamped with
//! CLOCK_REALTIME and copied to the capture.
//!
//! Like `outbuf::OutBuf`, but on the realtime clock (the truth lines up with the capture,
//! not with the monotonic delays) and with the bytes of every read()/write() handed to the
//! capture under the same stamp as the truth.

use std::io::{self, Write};
use std::net::TcpStream;

use fixscope_core::clock::realtime_ns;

use super::capture::{Capture, Tcp};
use crate::inbuf::{InBuf, ReadOutcome};
use crate::outbuf::Flushed;
use crate::session::Session;

/// Compact a blocked buffer once this many sent bytes sit at its front.
const COMPACT_AT: usize = 1 << 20;
/// Write attempts per flush.
const MAX_WRITES_PER_FLUSH: usize = 64;

pub struct Link {
    pub stream: TcpStream,
    pub gen: u32,
    pub inbuf: InBuf,
    pub session: Session,
    pub send: SendBuf,
    /// This connection in the capture (`--pcap`).
    pub tcp: Option<Tcp>,
    pub writable_armed: bool,
    pub dirty: bool,
    /// Close once the output is flushed (Logout exchanged or protocol error).
    pub closing: bool,
}

impl Link {
    pub fn new(stream: TcpStream, gen: u32, session: Session, inbuf_bytes: usize) -> Self {
        Link {
            stream,
            gen,
            inbuf: InBuf::with_capacity(inbuf_bytes),
            session,
            send: SendBuf {
                out: Vec::with_capacity(64 * 1024),
                pos: 0,
                stamps: Vec::with_capacity(1024),
                head: 0,
            },
            tcp: None,
            writable_armed: false,
            dirty: false,
            closing: false,
        }
    }

    /// One read(): the outcome and, with data, CLOCK_REALTIME right after it returned (the
    /// bytes are in the capture under that stamp).
    pub fn read(&mut self, cap: &mut Option<Capture>) -> io::Result<(ReadOutcome, u64)> {
        let r = self.inbuf.read_from(&mut self.stream)?;
        if !matches!(r, ReadOutcome::Data) {
            return Ok((r, 0));
        }
        let ts = realtime_ns();
        if let (Some(cap), Some(tcp)) = (cap.as_mut(), self.tcp.as_mut()) {
            cap.data(tcp, false, ts, self.inbuf.last_read());
        }
        Ok((r, ts))
    }

    /// Writes what is pending (see [`SendBuf::flush`]).
    pub fn flush(
        &mut self,
        cap: &mut Option<Capture>,
        on_sent: impl FnMut(u64, u64),
    ) -> io::Result<Flushed> {
        self.send
            .flush(&mut self.stream, &mut self.tcp, cap, on_sent)
    }
}

/// The send buffer: messages appended, some tagged, written with as few write()s as the
/// socket allows.
pub struct SendBuf {
    out: Vec<u8>,
    pos: usize,
    /// `(end offset in out, tag)` of tagged messages, in offset order; done before `head`.
    stamps: Vec<(usize, u64)>,
    head: usize,
}

impl SendBuf {
    /// The buffer to append encoded messages to.
    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Tags the bytes appended so far (the last message) with `tag`.
    pub fn stamp(&mut self, tag: u64) {
        self.stamps.push((self.out.len(), tag));
    }

    pub fn pending(&self) -> usize {
        self.out.len() - self.pos
    }

    /// Writes what is pending; `on_sent(tag, ts)` for each tagged message fully written, `ts`
    /// being CLOCK_REALTIME just before the write() that completed it (the bytes of that
    /// write() are in the capture under the same stamp).
    pub fn flush(
        &mut self,
        stream: &mut TcpStream,
        tcp: &mut Option<Tcp>,
        cap: &mut Option<Capture>,
        mut on_sent: impl FnMut(u64, u64),
    ) -> io::Result<Flushed> {
        for _ in 0..MAX_WRITES_PER_FLUSH {
            if self.pos == self.out.len() {
                self.clear();
                return Ok(Flushed::Done);
            }
            let ts = realtime_ns();
            match stream.write(&self.out[self.pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    if let (Some(cap), Some(tcp)) = (cap.as_mut(), tcp.as_mut()) {
                        cap.data(tcp, true, ts, &self.out[self.pos..self.pos + n]);
                    }
                    self.pos += n;
                    while self.head < self.stamps.len() && self.stamps[self.head].0 <= self.pos {
                        on_sent(self.stamps[self.head].1, ts);
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
        Ok(if self.pos == self.out.len() {
            self.clear();
            Flushed::Done
        } else {
            Flushed::Blocked
        })
    }

    fn clear(&mut self) {
        self.out.clear();
        self.pos = 0;
        self.stamps.clear();
        self.head = 0;
    }

    fn compact(&mut self) {
        if self.pos < COMPACT_AT {
            return;
        }
        let sent = self.pos;
        self.out.drain(..sent);
        self.pos = 0;
        self.stamps.drain(..self.head);
        self.head = 0;
        for s in &mut self.stamps {
            s.0 -= sent;
        }
    }
}
