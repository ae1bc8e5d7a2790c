//! The SoupBinTCP session layer as the order layer needs it: which *logical* session a
//! TCP connection carries, the implicit numbering of the host's sequenced packets, and
//! what must survive a reconnect (docs/protocols.md, "Session and pairing rules").
//!
//! A logical session is named by the Login Accepted's session id and the Login Request's
//! username ([`SessionName`]). Its state — the highest host sequence number seen, the
//! order keys seen, the orders still open — lives in a `SessionBook` (`orders`) the caller
//! owns for a whole run and lends (`&mut`) to each connection's
//! [`OuchConnection::on_packet`](crate::orders::OuchConnection::on_packet), so a second
//! TCP connection of the same logical session (a re-login after a failure) sees what the
//! first one saw: the replayed packets are recognised and emit nothing.

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
}
