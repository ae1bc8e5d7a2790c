//! The FIXP session layer as the order layer needs it: which logical session (UUID) a TCP
//! connection carries, CME's explicit numbering of its business messages, and what must
//! survive a reconnect (docs/protocols.md, "CME iLink 3").
//!
//! A logical session is its UUID: "a single iLink 3 logical session with the same UUID
//! can exist across multiple sequential physical connections". Its state — the highest
//! CME sequence number seen, the ranges a gap skipped, the order keys seen, the open
//! orders — lives in a `SessionBook` (`orders`) the caller owns for a whole run and lends
//! to each connection per message, so a second connection of the same UUID (a
//! re-Establish after a failure) sees what the first one saw.

/// The longest key: a u64 OrderRequestID in decimal (20 digits), or a Firm (5).
pub const KEY_CAPACITY: usize = 20;

/// A small owned byte string: an order key, a Firm. `Copy`, so an event borrows nothing
/// from the connection that made it and no message allocates.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Key {
    bytes: [u8; KEY_CAPACITY],
    len: u8,
}

impl Key {
    /// The key of `bytes` (its first [`KEY_CAPACITY`] bytes).
    pub fn new(bytes: &[u8]) -> Self {
        let mut k = Key::default();
        let n = bytes.len().min(KEY_CAPACITY);
        k.bytes[..n].copy_from_slice(&bytes[..n]);
        k.len = n as u8;
        k
    }

    /// An OrderRequestID as decimal ASCII: the order layer's keys.
    pub fn decimal(n: u64) -> Self {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Key::new(&digits[at..])
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// A logical iLink 3 session: its UUID, and the Firm the client's Negotiate or
/// Establish named (empty when neither was seen), for display. The UUID alone
/// identifies it: what the session table names an iLink 3 session by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SessionName {
    pub uuid: u64,
    pub firm: Key,
}

/// What a CME business message's number says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Numbered {
    /// Above the highest seen, not marked a retransmission: sent now.
    New,
    /// Seen before, or marked a retransmission of one sent before this run looked: a
    /// replay, nothing to apply.
    Replayed,
    /// A replay of a message this run never saw sent (inside a range a gap skipped):
    /// its state applies, its time does not.
    Recovered,
}

/// What a connection counted (defined with every counter, in `fixscope-model`).
pub use fixscope_model::counters::Ilink3Counters;

/// A session-layer fact of one message, for the session table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionFact {
    /// Negotiate500: the client asks to negotiate `uuid` for `firm`.
    NegotiateRequested { uuid: u64, firm: Key },
    /// NegotiationResponse501.
    Negotiated { uuid: u64 },
    /// Establish503: the client asks to establish `uuid`, expecting `next_seq` next.
    EstablishRequested { name: SessionName, next_seq: u32 },
    /// EstablishmentAck504: the connection now carries the logical session `name`; CME's
    /// next business message is `next_seq`. `resumed`: the UUID was seen before in this
    /// run; `gap_messages`: CME messages skipped past the highest seen.
    Established {
        name: SessionName,
        next_seq: u32,
        resumed: bool,
        gap_messages: u64,
    },
    /// NegotiationReject502, EstablishmentReject505, RetransmitReject510.
    Rejected { template_id: u16, error_codes: u16 },
    /// Sequence506 (either way): a keep-alive with the sender's next number; from CME,
    /// `gap_messages` it skipped past the highest seen.
    Heartbeat {
        from: crate::Side,
        next_seq: u32,
        gap_messages: u64,
    },
    /// Terminate507 (either way).
    Terminated { from: crate::Side, error_codes: u16 },
    /// RetransmitRequest508: the client asks for `count` messages from `from_seq` of
    /// `last_uuid` (a previous session's) or its current one.
    RetransmitRequested {
        from_seq: u32,
        count: u32,
        last_uuid: Option<u64>,
    },
    /// Retransmission509: the replay of `count` messages from `from_seq` follows.
    Retransmission {
        from_seq: u32,
        count: u32,
        last_uuid: Option<u64>,
    },
    /// NotApplied513: CME did not apply `count` client messages from `from_seq`.
    NotApplied { from_seq: u32, count: u32 },
    /// A CME business message numbered `seq`; `replayed` when marked a retransmission or
    /// not above the highest seen (no event); `recovered` when a replay of a number this
    /// run never saw sent.
    Sequenced {
        seq: u32,
        replayed: bool,
        recovered: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_request_id_is_its_decimal_digits() {
        assert_eq!(Key::decimal(0).as_bytes(), b"0");
        assert_eq!(Key::decimal(1001).as_bytes(), b"1001");
        assert_eq!(Key::decimal(u64::MAX).as_bytes(), b"18446744073709551615");
        assert_eq!(Key::new(&[b'x'; 30]).as_bytes().len(), KEY_CAPACITY);
    }
}
