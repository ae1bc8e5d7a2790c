//! CME's Simple Open Framing Header: what cuts one direction of an iLink 3 connection
//! into messages. Each message begins with Message Length (u16 little-endian, the whole
//! message including the 4-byte SOFH) and Encoding Type (u16 little-endian, 0xCAFE)
//! (CME "iLink 3 Message Header"). [`SofhFramer`] delivers whole messages, SOFH
//! included, on the seam's [`Framer`] contract.
//!
//! **Lost sync.** A length below the two headers (4 + 8) or above [`MAX_MESSAGE_LEN`], or
//! an encoding type other than 0xCAFE, means the framer is not at a message boundary:
//! counted (`bad_body_length`), and framing stops as after a hole. It resumes as
//! SoupBinTCP's framer does, on the first delivery (one `push_at`: one segment's readable
//! bytes) that is *aligned*: a chain of whole plausible messages — each SOFH sound and its
//! SBE header naming schema 8 — from its first byte to its last. Guessing a boundary at
//! the next 0xCAFE inside a delivery could take a price's bytes for a header; senders
//! write messages whole, so an aligned segment comes soon (a Sequence506 keep-alive is
//! one). A connection is assumed to start at a boundary (its first bytes are a Negotiate
//! or Establish, or CME's answer: [`crate::Ilink3`] recognises them).

use fixscope_protocol::{ByteTimes, FramedMessage, Framer, FramingCounters};

use crate::sbe::{self, ENCODING_TYPE, HEADERS_LEN};

/// Largest Message Length accepted. The field allows 65,535; iLink 3's messages are
/// under 600 bytes but for repeating groups (a mass quote's hundred entries, a party
/// details list), so a larger value means the framer is not at a boundary.
pub const MAX_MESSAGE_LEN: usize = 16 * 1024;

/// Whether an SOFH (Message Length, Encoding Type) can start a message.
fn plausible(len: usize, encoding: u16) -> bool {
    encoding == ENCODING_TYPE && (HEADERS_LEN..=MAX_MESSAGE_LEN).contains(&len)
}

/// Whether `data` is a chain of whole plausible messages from its first byte to its last
/// (the resync rule in the module's doc).
fn aligned_chain(data: &[u8]) -> bool {
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        let Some((len, encoding)) = sbe::sofh(rest) else {
            return false;
        };
        let schema_ok = sbe::header(rest).is_some_and(|h| h.schema_id == crate::schema::SCHEMA_ID);
        if !plausible(len, encoding) || !schema_ok || rest.len() < len {
            return false;
        }
        at += len;
    }
    !data.is_empty()
}

/// Frames one direction of an iLink 3 connection (the module's doc says how it resyncs).
#[derive(Debug, Default)]
pub struct SofhFramer {
    /// The start of a message that began in an earlier delivery.
    held: Vec<u8>,
    /// Capture time and sequence number of the held message's first byte.
    held_first_ts_ns: u64,
    held_first_seq: u32,
    /// Not at a message boundary (after a hole or a bad SOFH): deliveries are skipped
    /// until an aligned one.
    lost: bool,
}

impl SofhFramer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the framer waits for an aligned delivery to resync.
    pub fn is_resyncing(&self) -> bool {
        self.lost
    }

    /// An SOFH that cannot start a message: counted, its bytes and the rest of the
    /// delivery skipped, framing stopped until an aligned delivery.
    fn lose(&mut self, skipped: usize, counters: &mut FramingCounters) {
        counters.bad_body_length += 1;
        counters.skipped_bytes += skipped as u64;
        self.held.clear();
        self.lost = true;
    }

    /// Keeps the start of a message the delivery does not complete.
    fn hold(&mut self, rest: &[u8], times: ByteTimes, seq: u32) {
        self.held.clear();
        self.held.extend_from_slice(rest);
        self.held_first_ts_ns = times.captured_ns;
        self.held_first_seq = seq;
    }

    /// Completes the held message with the start of `data`; returns how many bytes of
    /// `data` it took (all of them when the message is still incomplete or was bad).
    fn complete_held<F>(
        &mut self,
        data: &[u8],
        times: ByteTimes,
        seq: u32,
        counters: &mut FramingCounters,
        on_message: &mut F,
    ) -> usize
    where
        F: FnMut(FramedMessage<'_>),
    {
        let mut at = 0;
        if self.held.len() < 4 {
            at = (4 - self.held.len()).min(data.len());
            self.held.extend_from_slice(&data[..at]);
        }
        let Some((len, encoding)) = sbe::sofh(&self.held) else {
            return at;
        };
        if !plausible(len, encoding) {
            self.lose(self.held.len() + data.len() - at, counters);
            return data.len();
        }
        let take = (len - self.held.len()).min(data.len() - at);
        self.held.extend_from_slice(&data[at..at + take]);
        at += take;
        if self.held.len() == len {
            counters.messages += 1;
            on_message(FramedMessage {
                bytes: &self.held,
                first_byte_ts_ns: self.held_first_ts_ns,
                last_byte_ts_ns: times.readable_ns,
                first_byte_seq: self.held_first_seq,
                last_byte_seq: seq.wrapping_add(at as u32).wrapping_sub(1),
            });
            self.held.clear();
        }
        at
    }
}

impl Framer for SofhFramer {
    fn push_at<F>(
        &mut self,
        data: &[u8],
        times: ByteTimes,
        seq: u32,
        counters: &mut FramingCounters,
        mut on_message: F,
    ) where
        F: FnMut(FramedMessage<'_>),
    {
        if self.lost {
            if !aligned_chain(data) {
                counters.skipped_bytes += data.len() as u64;
                return;
            }
            self.lost = false;
        }
        let mut at = 0;
        if !self.held.is_empty() {
            at = self.complete_held(data, times, seq, counters, &mut on_message);
        }
        while at < data.len() && !self.lost {
            let rest = &data[at..];
            let rest_seq = seq.wrapping_add(at as u32);
            let Some((len, encoding)) = sbe::sofh(rest) else {
                self.hold(rest, times, rest_seq);
                return;
            };
            if !plausible(len, encoding) {
                self.lose(rest.len(), counters);
                return;
            }
            if rest.len() < len {
                self.hold(rest, times, rest_seq);
                return;
            }
            counters.messages += 1;
            on_message(FramedMessage {
                bytes: &rest[..len],
                first_byte_ts_ns: times.captured_ns,
                last_byte_ts_ns: times.readable_ns,
                first_byte_seq: rest_seq,
                last_byte_seq: rest_seq.wrapping_add(len as u32 - 1),
            });
            at += len;
        }
    }

    fn gap(&mut self, counters: &mut FramingCounters) {
        if !self.held.is_empty() {
            counters.gap_cut_messages += 1;
        }
        self.held.clear();
        self.lost = true;
    }

    fn pending_bytes(&self) -> usize {
        self.held.len()
    }
}
