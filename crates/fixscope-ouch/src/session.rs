//! The SoupBinTCP session layer as the order layer needs it: which *logical* session a
//! TCP connection carries, the implicit numbering of the host's sequenced packets, and
//! what must survive a reconnect (docs/protocols.md, "Session and pairing rules").
//!
//! A logical session is named by the Login Accepted's session id and the Login Request's
//! username ([`SessionName`]). Its state — the highest host sequence number seen, the
//! order keys seen, the orders still open — lives in a [`SessionBook`] that the caller
//! owns for a whole run and lends (`&mut`) to each connection's
//! [`OuchConnection::on_packet`](crate::orders::OuchConnection::on_packet), so a second
//! TCP connection of the same logical session (a re-login after a failure) sees what the
//! first one saw: the replayed packets are recognised and emit nothing.

use std::collections::HashMap;

use crate::orders::OrderBook;

/// The longest key: a 4.2 Order Token (14) or a 5.0 UserRefNum in decimal (10), plus a
/// marker (a cancel's or a modify's key, `orders`).
pub const KEY_CAPACITY: usize = 24;

/// A small owned byte string: an order key, a session id, a username. Owned, so an event
/// borrows nothing from the connection that made it; `Copy` and a few bytes, so no
/// allocation per message. Bytes past [`KEY_CAPACITY`] are cut (no SoupBinTCP or OUCH
/// field is that long).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Key {
    bytes: [u8; KEY_CAPACITY],
    len: u8,
}

impl Key {
    /// The key of `bytes` (its first [`KEY_CAPACITY`] bytes).
    pub fn new(bytes: &[u8]) -> Self {
        let mut k = Key::default();
        k.push(bytes);
        k
    }

    /// A 5.0 UserRefNum as decimal ASCII.
    pub fn decimal(n: u32) -> Self {
        let mut digits = [0u8; 10];
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

    /// Appends `more` (up to the capacity).
    pub fn push(&mut self, more: &[u8]) {
        let at = usize::from(self.len);
        let n = more.len().min(KEY_CAPACITY - at);
        self.bytes[at..at + n].copy_from_slice(&more[..n]);
        self.len += n as u8;
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

/// A logical SoupBinTCP session: the session id the host accepted the login into and the
/// username that logged in (empty when the Login Request was not seen). What the session
/// table names an OUCH session by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SessionName {
    pub session: Key,
    pub username: Key,
}

/// What a run knows of one logical session, across its TCP connections.
#[derive(Debug, Default)]
pub(crate) struct LogicalSession {
    /// The highest implicit sequence number of a host `S` packet seen (0: none yet).
    pub(crate) highest_sequence: u64,
    /// Ranges (first, last) of host sequence numbers a re-login skipped: not seen, so a
    /// later replay of them is new.
    pub(crate) missing: Vec<(u64, u64)>,
    /// The orders, the keys seen, the pending cancels and modifies.
    pub(crate) orders: OrderBook,
}

impl LogicalSession {
    /// What the host packet numbered `sequence` is to this run (and takes it as seen).
    pub(crate) fn number(&mut self, sequence: u64) -> Numbered {
        if sequence > self.highest_sequence {
            self.highest_sequence = sequence;
            return Numbered::New;
        }
        let Some(i) = self
            .missing
            .iter()
            .position(|&(first, last)| (first..=last).contains(&sequence))
        else {
            return Numbered::Replayed;
        };
        let (first, last) = self.missing[i];
        match (sequence == first, sequence == last) {
            (true, true) => {
                self.missing.swap_remove(i);
            }
            (true, false) => self.missing[i].0 = sequence + 1,
            (false, true) => self.missing[i].1 = sequence - 1,
            (false, false) => {
                self.missing[i].1 = sequence - 1;
                self.missing.push((sequence + 1, last));
            }
        }
        Numbered::Recovered
    }
}

/// What a host packet's number says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Numbered {
    /// Above the highest seen: sent now.
    New,
    /// At or below the highest seen, and seen: a replay.
    Replayed,
    /// At or below the highest seen, inside a range a gap skipped: a replay of a packet
    /// this run never saw sent.
    Recovered,
}

/// The logical sessions of a run, by (session id, username): shared by every connection,
/// lent to each per packet.
#[derive(Debug, Default)]
pub struct SessionBook {
    sessions: HashMap<SessionName, LogicalSession>,
}

impl SessionBook {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many logical sessions were seen.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The highest host sequence number seen on `name` (0: none, or not a session seen).
    pub fn highest_sequence(&self, name: &SessionName) -> u64 {
        self.sessions.get(name).map_or(0, |s| s.highest_sequence)
    }

    /// How many orders of `name` are still open (entered or replaced, not ended).
    pub fn open_orders(&self, name: &SessionName) -> usize {
        self.sessions
            .get(name)
            .map_or(0, |s| s.orders.open_orders())
    }

    pub(crate) fn entry(&mut self, name: SessionName) -> &mut LogicalSession {
        self.sessions.entry(name).or_default()
    }
}

/// What a connection counted (defined with every counter, in `fixscope-model`). Summed
/// over a run's connections by the caller (`merge_from`).
pub use fixscope_model::counters::OuchCounters;

/// A session-layer fact of one packet, for the session table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionFact {
    /// `L`: the client asks to log in as `username` (the requested session and sequence
    /// number as sent; blank session: the current one).
    LoginRequested {
        username: Key,
        requested_session: Key,
        requested_sequence: Option<u64>,
    },
    /// `A`: the connection now carries the logical session `name`; the host's next
    /// sequenced packet is `next_sequence`. `resumed`: the session was seen before in this
    /// run (a re-login). `gap_packets`: host packets skipped past the highest seen.
    LoggedIn {
        name: SessionName,
        next_sequence: u64,
        resumed: bool,
        gap_packets: u64,
    },
    /// `J`.
    LoginRejected { reason: u8 },
    /// An `S` packet, numbered `sequence`; `replayed` when not above the highest seen
    /// (no event); `recovered` when it is a replay of a number a gap skipped.
    Sequenced {
        sequence: u64,
        replayed: bool,
        recovered: bool,
    },
    /// `O` from the client.
    LogoutRequested,
    /// `Z` from the host.
    EndOfSession,
    /// `H` or `R`.
    Heartbeat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_ref_num_is_its_decimal_digits() {
        assert_eq!(Key::decimal(0).as_bytes(), b"0");
        assert_eq!(Key::decimal(1001).as_bytes(), b"1001");
        assert_eq!(Key::decimal(u32::MAX).as_bytes(), b"4294967295");
        let mut k = Key::new(&[b'x'; 30]);
        assert_eq!(k.as_bytes().len(), KEY_CAPACITY);
        k.push(b"more");
        assert_eq!(k.as_bytes(), &[b'x'; KEY_CAPACITY][..]);
    }

    #[test]
    fn a_sequence_number_is_new_once_even_inside_a_gap() {
        use Numbered::*;
        let mut s = LogicalSession::default();
        let seen: Vec<_> = [1, 2, 2, 1].map(|n| s.number(n)).into();
        assert_eq!(seen, [New, New, Replayed, Replayed]);
        s.missing.push((3, 7));
        assert_eq!(s.number(8), New);
        for n in [5, 3, 7, 4, 6] {
            assert_eq!(s.number(n), Recovered, "{n}");
            assert_eq!(s.number(n), Replayed, "{n} again");
        }
        assert!(s.missing.is_empty());
    }
}
