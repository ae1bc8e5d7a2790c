//! Plaintext without keys (`live --tls-uprobes`): the application's own OpenSSL calls
//! (`SSL_read`/`SSL_write` and their `_ex` forms, seen by uprobes) hand over what they
//! returned, each with the TCP byte range the call itself read or wrote; this module ties
//! those bytes to the TLS records the capture saw on the wire, so that every byte keeps the
//! time of **the segment that completed its record** — the same time the key-log path
//! gives — and never the time of the call.
//!
//! One [`CallJoin`] per direction. The wire side frames records by their clear headers
//! ([`SpanFramer`]: only sequence numbers, lengths and times are kept, no bytes); the call
//! side places each call's plaintext on those records:
//!
//! - **A write** (`SSL_write` returned n > 0 having written TCP bytes `[s0, s1)`): its
//!   plaintext is in the records ending in `(s0, s1]` — OpenSSL writes a call's records in
//!   the call. One record: every byte at its time. Several (a call over 16 KiB): split in
//!   order by each record's plaintext capacity (its length less the suite's overhead),
//!   which must add up to n exactly, else nothing is guessed.
//! - **A read** (`SSL_read` returned n > 0): OpenSSL returns data of one record per call,
//!   the last one it read. A call that read TCP bytes up to `s1` returns data of the last
//!   record ending at or before `s1` (records before it in the call were post-handshake
//!   messages: tickets, key updates); one that read none returns more of the record read
//!   before (the application's buffer was smaller than the record). A call whose TCP read
//!   ends inside a record (OpenSSL's `read_ahead`) or that returns more than its record
//!   holds cannot be placed.
//!
//! Whatever cannot be placed is counted (`tls_uprobe_unmapped`) and its bytes are a gap for
//! the FIX framer: never timed by a guess. Only calls of one kind feed a direction (the
//! first seen): when both ends run on this host, the reader's and the writer's calls carry
//! the same bytes.

use std::collections::VecDeque;

use crate::counters::TlsCounters;
use crate::plain::Plain;
use crate::record::{APPLICATION_DATA, MAX_PAYLOAD};
use crate::suite::{Aead, Suite, Version};

/// Which OpenSSL call returned the plaintext.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Read,
    Write,
    /// Not a call: the process that read (`Read` side) or wrote this connection's socket
    /// makes its OpenSSL calls on memory BIOs (an event-loop engine), so none of them can
    /// be tied to the connection. No bytes; it names why the connection is silent.
    MemoryBio,
}

/// One `SSL_read`/`SSL_write` (or `_ex`) of a watched connection that returned plaintext.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsCall<'a> {
    pub kind: CallKind,
    /// The TCP bytes the call itself read or wrote, `[start, end)` in the stream's sequence
    /// space; `None` when it did no TCP I/O (a read served from a record read before).
    pub tcp: Option<(u32, u32)>,
    /// What the call returned (its first bytes only when `truncated`).
    pub bytes: &'a [u8],
    /// The kernel copied fewer bytes than the call returned (a call over its copy limit).
    pub truncated: bool,
    /// When the call returned (the capture's clock): holds are timed by it.
    pub ts_ns: u64,
}

/// Calls held for their records at most this long (by the capture's clock): a write's
/// records reach the wire within microseconds, unless the capture does not see them (the
/// connection uses another interface).
pub const CALL_WAIT_NS: u64 = 5_000_000_000;
/// Plaintext bytes held per direction at most.
pub const MAX_HELD_CALL_BYTES: usize = 256 << 10;
/// Records framed and not yet given their plaintext, per direction, at most (a
/// connection whose calls are not seen: the engine does not use the hooked libssl).
const MAX_SPANS: usize = 1 << 14;
/// Protected records a direction may carry before its application's first call without
/// being silent: TLS 1.3's encrypted handshake flight and session tickets (each one
/// record or a few) look like application data on the wire.
pub const MAX_RECORDS_BEFORE_A_CALL: u32 = 16;

/// `a` before `b` in sequence space.
#[inline]
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// One record on the wire: `[start, end)` in sequence space, its clear outer type, and the
/// time of the segment that completed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
    pub outer: u8,
    pub ts_ns: u64,
}

impl Span {
    fn payload_len(&self) -> u32 {
        self.end.wrapping_sub(self.start) - 5
    }
}

/// Records of one direction framed by their headers as the stream's bytes arrive. Keeps no
/// byte but a header cut by a segment boundary.
#[derive(Debug, Default)]
pub struct SpanFramer {
    /// Sequence number of the next byte expected (`None`: before the first, or lost).
    next: Option<u32>,
    /// Where the record being framed starts.
    start: u32,
    header: [u8; 5],
    header_len: usize,
    /// Payload bytes of the current record still to come (after its header).
    body_left: u32,
    /// Framing lost (a hole, an implausible header): nothing is framed any more.
    lost: bool,
}

impl SpanFramer {
    /// Stream bytes from `seq`, arrived at `ts_ns`; each record they complete goes to `out`.
    pub fn push(&mut self, seq: u32, bytes: &[u8], ts_ns: u64, out: &mut impl FnMut(Span)) {
        if self.lost || bytes.is_empty() {
            return;
        }
        match self.next {
            None => {
                self.start = seq;
                self.next = Some(seq);
            }
            Some(next) if next != seq => return self.lose(),
            Some(_) => {}
        }
        self.next = Some(seq.wrapping_add(bytes.len() as u32));
        let mut rest = bytes;
        let mut at = seq;
        while !rest.is_empty() {
            if self.header_len < 5 {
                let take = (5 - self.header_len).min(rest.len());
                self.header[self.header_len..self.header_len + take].copy_from_slice(&rest[..take]);
                self.header_len += take;
                rest = &rest[take..];
                at = at.wrapping_add(take as u32);
                if self.header_len < 5 {
                    break;
                }
                let len = u16::from_be_bytes([self.header[3], self.header[4]]) as usize;
                if self.header[1] != 3 || len > MAX_PAYLOAD {
                    return self.lose();
                }
                self.body_left = len as u32;
            }
            let take = (self.body_left as usize).min(rest.len());
            rest = &rest[take..];
            at = at.wrapping_add(take as u32);
            self.body_left -= take as u32;
            if self.body_left == 0 {
                out(Span {
                    start: self.start,
                    end: at,
                    outer: self.header[0],
                    ts_ns,
                });
                self.start = at;
                self.header_len = 0;
            }
        }
    }

    /// A capture hole: record boundaries after it are unknown.
    pub fn lose(&mut self) {
        self.lost = true;
    }

    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The end of the last record completed (where the next starts).
    fn framed_to(&self) -> Option<u32> {
        self.next.map(|_| self.start)
    }
}

/// The record a read's bytes came from, and how much of its capacity they took.
#[derive(Clone, Copy, Debug)]
struct Current {
    ts_ns: u64,
    capacity: u32,
    taken: u32,
}

/// A call waiting for its records to be framed.
#[derive(Debug)]
struct Held {
    kind: CallKind,
    tcp: Option<(u32, u32)>,
    bytes: Vec<u8>,
    truncated: bool,
    ts_ns: u64,
}

impl Held {
    fn call(&self) -> TlsCall<'_> {
        TlsCall {
            kind: self.kind,
            tcp: self.tcp,
            bytes: &self.bytes,
            truncated: self.truncated,
            ts_ns: self.ts_ns,
        }
    }
}

enum Placed {
    Done,
    /// Its records are not all framed yet.
    Wait,
    Unmapped,
}

/// Bytes a protected record carries beyond its plaintext.
fn overhead(suite: &Suite) -> u32 {
    match (suite.version, suite.aead) {
        // Tag + inner content type (OpenSSL adds no padding unless asked to).
        (Version::Tls13, _) => 16 + 1,
        // Explicit nonce + tag.
        (Version::Tls12, Aead::Aes128Gcm | Aead::Aes256Gcm) => 8 + 16,
        (Version::Tls12, Aead::ChaCha20Poly1305) => 16,
    }
}

/// One direction's plaintext from calls, joined with its records on the wire.
#[derive(Debug, Default)]
pub struct CallJoin {
    framer: SpanFramer,
    spans: VecDeque<Span>,
    held: VecDeque<Held>,
    held_bytes: usize,
    /// Which calls feed this direction (the first kind seen).
    source: Option<CallKind>,
    /// Protected records framed while no call had come.
    uncalled: u32,
    current: Option<Current>,
    /// Set once the suite is known (the ServerHello).
    overhead: Option<u32>,
    /// The newest time seen (wire or call): holds expire by it.
    now_ns: u64,
    /// Calls are held, not placed (the connection waits for its key).
    paused: bool,
}

impl CallJoin {
    /// The suite the ServerHello chose: how much of each record is plaintext.
    pub fn set_suite(&mut self, suite: &Suite) {
        self.overhead = Some(overhead(suite));
    }

    /// Stream bytes of this direction from `seq`, arrived at `ts_ns`.
    pub fn wire(
        &mut self,
        seq: u32,
        bytes: &[u8],
        ts_ns: u64,
        counters: &mut TlsCounters,
        out: &mut impl FnMut(Plain<'_>),
    ) {
        self.now_ns = self.now_ns.max(ts_ns);
        let (spans, uncalled, calls) = (&mut self.spans, &mut self.uncalled, self.source);
        self.framer.push(seq, bytes, ts_ns, &mut |s| {
            if calls.is_none() && s.outer == APPLICATION_DATA {
                *uncalled += 1;
            }
            spans.push_back(s)
        });
        if self.spans.len() > MAX_SPANS {
            // Nobody's calls take these records: the oldest can no longer be placed.
            self.spans.pop_front();
        }
        if !self.paused {
            self.place_held(counters, out);
        }
    }

    /// A hole in this direction's stream: its records cannot be framed any more, so no
    /// later call of it can be placed.
    pub fn wire_hole(&mut self) {
        self.framer.lose();
        self.spans.clear();
        self.current = None;
    }

    /// True when more protected records came than a handshake makes and no call of the
    /// application did: it does not use the hooked library. Asked at the connection's end
    /// only (while it runs, the application may not have read yet).
    pub fn is_silent(&self) -> bool {
        self.source.is_none() && self.uncalled > MAX_RECORDS_BEFORE_A_CALL
    }

    /// One call's plaintext.
    pub fn call(
        &mut self,
        call: &TlsCall<'_>,
        counters: &mut TlsCounters,
        out: &mut impl FnMut(Plain<'_>),
    ) {
        self.now_ns = self.now_ns.max(call.ts_ns);
        if *self.source.get_or_insert(call.kind) != call.kind {
            // The other end's calls carry the same bytes.
            counters.tls_uprobe_ignored += 1;
            return;
        }
        if !self.paused {
            self.place_held(counters, out);
        }
        if self.held.is_empty() && !self.paused {
            match self.place(call, out) {
                Placed::Done => {
                    counters.tls_uprobe_placed += 1;
                    return;
                }
                Placed::Unmapped => return unmapped(counters, out),
                Placed::Wait => {}
            }
        }
        if self.held_bytes + call.bytes.len() > MAX_HELD_CALL_BYTES {
            return unmapped(counters, out);
        }
        self.held_bytes += call.bytes.len();
        self.held.push_back(Held {
            kind: call.kind,
            tcp: call.tcp,
            bytes: call.bytes.to_vec(),
            truncated: call.truncated,
            ts_ns: call.ts_ns,
        });
    }

    /// Holds calls without placing them until [`CallJoin::resume`].
    pub fn pause(&mut self) {
        self.paused = true;
    }

    /// Places the calls held while paused, and those that come from now on.
    pub fn resume(&mut self, counters: &mut TlsCounters, out: &mut impl FnMut(Plain<'_>)) {
        self.paused = false;
        self.place_held(counters, out);
    }

    /// Calls held, not yet placed.
    pub fn held_calls(&self) -> usize {
        self.held.len()
    }

    /// The connection ends: calls still held are unmapped.
    pub fn settle(&mut self, counters: &mut TlsCounters, out: &mut impl FnMut(Plain<'_>)) {
        self.paused = false;
        self.place_held(counters, out);
        while let Some(h) = self.held.pop_front() {
            self.held_bytes -= h.bytes.len();
            unmapped(counters, out);
        }
    }

    /// Places held calls, oldest first, as far as their records are framed; a call held
    /// past [`CALL_WAIT_NS`] is unmapped.
    fn place_held(&mut self, counters: &mut TlsCounters, out: &mut impl FnMut(Plain<'_>)) {
        while let Some(h) = self.held.pop_front() {
            let placed = self.place(&h.call(), out);
            match placed {
                Placed::Wait if self.now_ns.saturating_sub(h.ts_ns) <= CALL_WAIT_NS => {
                    self.held.push_front(h);
                    return;
                }
                Placed::Done => counters.tls_uprobe_placed += 1,
                Placed::Wait | Placed::Unmapped => unmapped(counters, out),
            }
            self.held_bytes -= h.bytes.len();
        }
    }

    fn capacity(&self, span: &Span) -> Option<u32> {
        span.payload_len().checked_sub(self.overhead?)
    }

    /// Whether `span` can carry application data (TLS 1.2's outer type says it; TLS 1.3's
    /// records all say 23).
    fn carries_data(&self, span: &Span) -> bool {
        span.outer == APPLICATION_DATA
    }

    fn place(&mut self, call: &TlsCall<'_>, out: &mut impl FnMut(Plain<'_>)) -> Placed {
        if self.framer.is_lost() || self.overhead.is_none() || call.truncated {
            return Placed::Unmapped;
        }
        match call.kind {
            CallKind::Write => self.place_write(call, out),
            CallKind::Read => self.place_read(call, out),
            // A note about the connection, never a call to place (TlsConnection takes it).
            CallKind::MemoryBio => Placed::Unmapped,
        }
    }

    fn place_write(&mut self, call: &TlsCall<'_>, out: &mut impl FnMut(Plain<'_>)) -> Placed {
        let Some((s0, s1)) = call.tcp else {
            return Placed::Unmapped;
        };
        match self.framer.framed_to() {
            Some(to) if !before(to, s1) => {}
            _ => return Placed::Wait,
        }
        while self.spans.front().is_some_and(|s| !before(s0, s.end)) {
            self.spans.pop_front();
        }
        let mut records = Vec::new();
        while let Some(s) = self.spans.front().copied() {
            if before(s1, s.end) {
                break;
            }
            self.spans.pop_front();
            if self.carries_data(&s) {
                records.push(s);
            }
        }
        let capacities: Option<Vec<u32>> = records.iter().map(|s| self.capacity(s)).collect();
        let Some(capacities) = capacities else {
            return Placed::Unmapped;
        };
        if records.is_empty() || capacities.iter().sum::<u32>() as usize != call.bytes.len() {
            return Placed::Unmapped;
        }
        let mut rest = call.bytes;
        for (span, cap) in records.iter().zip(capacities) {
            let (here, after) = rest.split_at(cap as usize);
            rest = after;
            out(Plain::Data {
                bytes: here,
                ts_ns: span.ts_ns,
            });
        }
        Placed::Done
    }

    fn place_read(&mut self, call: &TlsCall<'_>, out: &mut impl FnMut(Plain<'_>)) -> Placed {
        if let Some((_, s1)) = call.tcp {
            match self.framer.framed_to() {
                Some(to) if !before(to, s1) => {}
                _ => return Placed::Wait,
            }
            let mut last = None;
            while let Some(s) = self.spans.front().copied() {
                if before(s1, s.end) {
                    break;
                }
                self.spans.pop_front();
                if self.carries_data(&s) {
                    last = Some(s);
                }
            }
            // The read ended inside a record: OpenSSL read ahead, which record each byte
            // came from is not known.
            if self.spans.front().is_some_and(|s| before(s.start, s1)) {
                self.current = None;
                return Placed::Unmapped;
            }
            if let Some(s) = last {
                let Some(capacity) = self.capacity(&s) else {
                    return Placed::Unmapped;
                };
                self.current = Some(Current {
                    ts_ns: s.ts_ns,
                    capacity,
                    taken: 0,
                });
            }
        }
        let Some(cur) = self.current.as_mut() else {
            return Placed::Unmapped;
        };
        let n = call.bytes.len() as u32;
        if cur.taken + n > cur.capacity {
            self.current = None;
            return Placed::Unmapped;
        }
        cur.taken += n;
        out(Plain::Data {
            bytes: call.bytes,
            ts_ns: cur.ts_ns,
        });
        Placed::Done
    }
}

/// Decrypted plaintext held for the comparison at most, per direction (then the
/// comparison stops: the calls are far behind).
const MAX_CHECK_BYTES: usize = 1 << 20;

/// `--tls-uprobes` with `--tls-keylog`: a connection that is decrypted is also placed by
/// its calls, and each record's worth the calls place is compared with what decryption
/// gave for the same bytes — same bytes, same time (`tls_uprobe_verified`,
/// `tls_uprobe_disagreed`). What the calls place goes nowhere else.
#[derive(Debug, Default)]
pub struct CallCheck {
    /// Decrypted chunks not yet compared, with their times; `offset` into the first.
    expected: VecDeque<(Vec<u8>, u64)>,
    offset: usize,
    held: usize,
    /// Too much was held: nothing more is compared.
    stopped: bool,
    /// Decryption gave plaintext / calls' placements were compared with it.
    decrypted_any: bool,
    compared: u64,
}

impl CallCheck {
    /// Plaintext decryption gave, at `ts_ns`.
    pub fn decrypted(&mut self, bytes: &[u8], ts_ns: u64) {
        if bytes.is_empty() {
            return;
        }
        self.decrypted_any = true;
        if self.stopped {
            return;
        }
        self.held += bytes.len();
        if self.held > MAX_CHECK_BYTES {
            self.stopped = true;
            self.expected.clear();
            return;
        }
        self.expected.push_back((bytes.to_vec(), ts_ns));
    }

    /// What the calls placed: counted as verified when it is the next decrypted bytes at
    /// the same time, else as disagreed.
    pub fn placed(&mut self, plain: Plain<'_>, counters: &mut TlsCounters) {
        let Plain::Data { bytes, ts_ns } = plain else {
            return; // an unmapped call: counted where it was found
        };
        if self.stopped {
            return;
        }
        self.compared += 1;
        if self.take(bytes, ts_ns) {
            counters.tls_uprobe_verified += 1;
        } else {
            counters.tls_uprobe_disagreed += 1;
        }
    }

    /// Decryption gave this direction plaintext.
    pub fn decrypted_any(&self) -> bool {
        self.decrypted_any
    }

    /// Placements compared with the decryption (verified or disagreed).
    pub fn compared(&self) -> u64 {
        self.compared
    }

    /// Whether `bytes` at `ts_ns` are the decryption's, consuming them. Chunks older than
    /// `ts_ns` were never placed (their calls were unmapped or lost, counted there) and are
    /// skipped, as are chunks of the same time before the one `bytes` continue or begin
    /// (several records completed by one segment): one call not placed must not make
    /// every later one disagree. Bytes matching nothing consume nothing.
    fn take(&mut self, bytes: &[u8], ts_ns: u64) -> bool {
        while self.expected.front().is_some_and(|(_, at)| *at < ts_ns) {
            self.drop_front();
        }
        let offset = self.offset;
        let found = self
            .expected
            .iter()
            .take_while(|(_, at)| *at == ts_ns)
            .enumerate()
            .position(|(i, (chunk, _))| {
                let rest = &chunk[if i == 0 { offset } else { 0 }..];
                let n = rest.len().min(bytes.len());
                n > 0 && rest[..n] == bytes[..n]
            });
        let Some(skip) = found else {
            return false;
        };
        for _ in 0..skip {
            self.drop_front();
        }
        self.consume(bytes, ts_ns)
    }

    /// The first chunk, whatever of it is left, is no longer expected.
    fn drop_front(&mut self) {
        if let Some((chunk, _)) = self.expected.pop_front() {
            self.held -= chunk.len() - self.offset;
            self.offset = 0;
        }
    }

    /// Compares `bytes` with the expected ones from the current position, byte for byte
    /// with their times, consuming them.
    fn consume(&mut self, mut bytes: &[u8], ts_ns: u64) -> bool {
        let mut same = true;
        while !bytes.is_empty() {
            let Some((chunk, at)) = self.expected.front() else {
                return false;
            };
            let rest = &chunk[self.offset..];
            let n = rest.len().min(bytes.len());
            same &= rest[..n] == bytes[..n] && *at == ts_ns;
            bytes = &bytes[n..];
            self.offset += n;
            self.held -= n;
            if self.offset == chunk.len() {
                self.expected.pop_front();
                self.offset = 0;
            }
        }
        same
    }
}

fn unmapped(counters: &mut TlsCounters, out: &mut impl FnMut(Plain<'_>)) {
    counters.tls_uprobe_unmapped += 1;
    out(Plain::Gap);
}

#[cfg(test)]
mod tests;
