//! One direction of a TLS connection: its records, its current key and sequence number,
//! the key it switches to next, and how it finds its place again after a capture hole.

use crate::cipher::{Opened, RecordKey, TAG_LEN};
use crate::handshake::HandshakeFramer;
use crate::record::{plausible_header, RecordAt, RecordReader, APPLICATION_DATA};

/// Most sequence numbers tried for one candidate record after a hole.
const MAX_SEQ_TRIES: u64 = 1 << 16;
/// Bytes searched for a record boundary after a hole before giving them up.
const MAX_RESYNC_BYTES: usize = 1 << 20;
/// The smallest protected record on the wire: header, one byte (TLS 1.3's inner type), tag.
const MIN_RECORD: u64 = 5 + 1 + TAG_LEN as u64;

#[derive(Debug, Default)]
pub struct DirectionState {
    pub reader: RecordReader,
    pub handshake: HandshakeFramer,
    /// The key records are protected with now (`None`: they are in the clear).
    pub key: Option<RecordKey>,
    pub seq: u64,
    /// The key this direction switches to next: TLS 1.2's at its ChangeCipherSpec, TLS
    /// 1.3's application key at its Finished.
    pub next_key: Option<RecordKey>,
    /// TLS 1.3: the current application traffic secret (KeyUpdate derives the next).
    pub traffic_secret: Option<Vec<u8>>,
    /// After a capture hole: how many bytes it took (where the sequence number search
    /// starts to reason), until a record verifies again.
    pub lost: Option<u64>,
    /// The connection is TLS 1.3 (every protected record's outer type is 23).
    pub tls13: bool,
}

/// What decrypting the next record gave.
#[derive(Debug)]
pub enum Decrypted {
    /// No complete record pending (or the hole's search needs more bytes).
    Wait,
    /// A record in the clear (type, payload range, time).
    Clear(RecordAt),
    /// A protected record opened: its content type and plaintext range in the buffer.
    Opened(RecordAt, Opened),
    /// A protected record whose tag did not verify under any key it could have.
    Failed(RecordAt),
    /// The bytes pending are no records (framing lost): the caller treats it as a hole.
    Garbage,
}

impl DirectionState {
    /// Takes the next record pending: in the clear when `protected` is false, else opened
    /// with the current key (or, during the TLS 1.3 handshake, the next one: a lost
    /// Finished must not lose the session). After a hole, searches the record boundary and
    /// the sequence number first. The record is consumed unless `Wait`.
    pub fn next_record(&mut self, protected: bool, resyncs: &mut u64) -> Decrypted {
        if self.lost.is_some() {
            return self.resync(protected, resyncs);
        }
        let Some(at) = self.reader.peek() else {
            if self.reader.pending().len() >= 5 && !plausible_header(self.reader.pending()) {
                return self.garbage();
            }
            return Decrypted::Wait;
        };
        if !plausible_header(&at.header) {
            return self.garbage();
        }
        self.reader.consume(5 + at.payload_end - at.payload_start);
        if !protected {
            return Decrypted::Clear(at);
        }
        self.open(at)
    }

    fn garbage(&mut self) -> Decrypted {
        self.reader.clear();
        self.handshake.clear();
        Decrypted::Garbage
    }

    fn open(&mut self, at: RecordAt) -> Decrypted {
        let Some(key) = self.key.as_ref() else {
            return Decrypted::Failed(at);
        };
        let mut scratch = Vec::new();
        let payload = &mut self.reader.buffered_mut()[at.payload_start..at.payload_end];
        if self.next_key.is_some() {
            scratch.extend_from_slice(payload); // a second try needs the ciphertext
        }
        if let Some(opened) = key.open(self.seq, &at.header, payload) {
            self.seq += 1;
            return Decrypted::Opened(at, opened);
        }
        self.seq += 1;
        if let Some(next) = self.next_key.as_ref() {
            let payload = &mut self.reader.buffered_mut()[at.payload_start..at.payload_end];
            payload.copy_from_slice(&scratch);
            if let Some(opened) = next.open(0, &at.header, payload) {
                self.key = self.next_key.take();
                self.seq = 1;
                return Decrypted::Opened(at, opened);
            }
        }
        Decrypted::Failed(at)
    }

    /// After a hole: the first record boundary at which a record verifies under the
    /// current key at some sequence number the hole allows (or under the next key from 0).
    fn resync(&mut self, protected: bool, resyncs: &mut u64) -> Decrypted {
        let lost = self.lost.unwrap_or(0);
        let mut skip = 0;
        loop {
            let pending = self.reader.pending();
            if skip + 5 > pending.len() {
                break;
            }
            if !plausible_header(&pending[skip..])
                || (protected && self.tls13 && pending[skip] != APPLICATION_DATA)
            {
                skip += 1;
                continue;
            }
            let Some(at) = self.reader.peek_at(skip) else {
                // A plausible header whose record is not all here yet.
                return self.wait_or_give_up();
            };
            if !protected {
                // In the clear a plausible header is all there is to go by; a following
                // header (if there) must be plausible too.
                let next = skip + 5 + (at.payload_end - at.payload_start);
                let chained = pending
                    .get(next..)
                    .is_none_or(|rest| rest.len() < 5 || plausible_header(rest));
                if chained {
                    self.reader.consume(next);
                    self.lost = None;
                    *resyncs += 1;
                    return Decrypted::Clear(at);
                }
                skip += 1;
                continue;
            }
            let max_lost = (lost + skip as u64) / MIN_RECORD + 2;
            if let Some(opened) = self.search_seq(&at, max_lost.min(MAX_SEQ_TRIES)) {
                self.reader
                    .consume(skip + 5 + at.payload_end - at.payload_start);
                self.lost = None;
                *resyncs += 1;
                return Decrypted::Opened(at, opened);
            }
            skip += 1;
        }
        self.wait_or_give_up()
    }

    fn wait_or_give_up(&mut self) -> Decrypted {
        if self.reader.pending().len() > MAX_RESYNC_BYTES {
            let dropped = self.reader.pending().len() as u64;
            self.reader.clear();
            self.lost = Some(self.lost.unwrap_or(0) + dropped);
        }
        Decrypted::Wait
    }

    /// The sequence number under which `at` verifies: TLS 1.2 GCM's explicit nonce first
    /// (most senders send the sequence number), then every number the hole allows.
    fn search_seq(&mut self, at: &RecordAt, tries: u64) -> Option<Opened> {
        let range = at.payload_start..at.payload_end;
        let ciphertext = self.reader.buffered_mut()[range.clone()].to_vec();
        let key = self.key.as_ref()?;
        let hinted = key.explicit_nonce(&ciphertext);
        let candidates = hinted
            .into_iter()
            .chain(self.seq..self.seq.saturating_add(tries));
        for seq in candidates {
            let payload = &mut self.reader.buffered_mut()[range.clone()];
            payload.copy_from_slice(&ciphertext);
            if let Some(opened) = key.open(seq, &at.header, payload) {
                self.seq = seq + 1;
                return Some(opened);
            }
        }
        let next = self.next_key.as_ref()?;
        for seq in 0..tries {
            let payload = &mut self.reader.buffered_mut()[range.clone()];
            payload.copy_from_slice(&ciphertext);
            if let Some(opened) = next.open(seq, &at.header, payload) {
                self.key = self.next_key.take();
                self.seq = seq + 1;
                return Some(opened);
            }
        }
        None
    }

    /// A capture hole of `bytes` bytes: what was pending is not contiguous with what
    /// follows.
    pub fn hole(&mut self, bytes: u64) {
        let pending = self.reader.pending().len() as u64;
        self.reader.clear();
        self.handshake.clear();
        self.lost = Some(self.lost.unwrap_or(0) + pending + bytes);
    }

    /// The plaintext of an opened record.
    pub fn plaintext(&mut self, at: &RecordAt, opened: &Opened) -> &[u8] {
        let start = at.payload_start + opened.start;
        &self.reader.buffered_mut()[start..at.payload_start + opened.end]
    }
}
