//! OUCH's order layer: what each packet of a connection means to the correlator, as the
//! seam's [`OrderEvent`] (at most one per packet) plus a [`SessionFact`]. Pure logic: the
//! caller frames each direction (`soupbin::SoupBinFramer`) and hands the packets of both
//! in capture order to the connection's [`OuchConnection::on_packet`], with the run's
//! [`SessionBook`]. docs/protocols.md ("Session and pairing rules") states every rule,
//! in short:
//!
//! - a host `S` packet is numbered implicitly from its Login Accepted's sequence number;
//!   one numbered at or below the highest seen of its logical session is a replay and
//!   emits nothing;
//! - Enter Order → `NewOrder` keyed by its token (4.2, trimmed) / UserRefNum (5.0, in
//!   decimal); Replace → `Replace` keyed by the replacement token / new UserRefNum; a
//!   key seen before (4.2) or a UserRefNum not above the last (5.0) is a resend;
//! - Cancel and Modify name the order and have no key of their own: they are tracked
//!   under the order's key plus a marker no real key has ([`CANCEL_MARK`],
//!   [`MODIFY_MARK`]), Modify as a `Replace`;
//! - the responses' [`ResponseKind`]s by the spec, with the shares counted from the
//!   Enter / Replace (Executed has no leaves quantity).

use hashbrown::{HashMap, HashSet};

use fixscope_protocol::{OrderEvent, RequestType, ResponseCode, ResponseKind};

use crate::session::{Key, Numbered, OuchCounters, SessionFact, SessionName, KEY_CAPACITY};
use crate::soupbin::{self, Side, SoupPacket};
use crate::{ouch42, ouch50};

mod translate;
use translate::{request42, request50, response42, response50, Request, Response};

/// Appended to an order's key to make its pending cancel's key. Real keys are printable
/// ASCII (a 4.2 token) or digits (a 5.0 UserRefNum), never byte 0xFF, so no real key can
/// be a marked one; the correlator's display (lossy UTF-8) shows it as `K�cancel`.
pub const CANCEL_MARK: &[u8] = b"\xffcancel";
/// Appended to an order's key to make its pending modify's key (as [`CANCEL_MARK`]).
pub const MODIFY_MARK: &[u8] = b"\xffmodify";

/// The OUCH version a connection speaks (its port's configuration: the login does not
/// say).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    Ouch42,
    Ouch50,
}

/// One packet's order event, owned: [`OuchEvent::order_event`] lends it as the seam's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OuchEvent {
    Request {
        request_type: RequestType,
        key: Key,
        resend: bool,
        /// The OUCH message type letter (`O`, `U`, `X`, `M`).
        code: ResponseCode,
    },
    Response {
        key: Key,
        kind: ResponseKind,
        /// The order this response ends besides its own; empty when none.
        ends: Key,
        code: ResponseCode,
    },
}

impl OuchEvent {
    /// The seam's event, borrowing this one's keys.
    pub fn order_event(&self) -> OrderEvent<'_> {
        match self {
            OuchEvent::Request {
                request_type,
                key,
                resend,
                code,
            } => OrderEvent::Request {
                request_type: *request_type,
                key: key.as_bytes(),
                resend: *resend,
                code: *code,
            },
            OuchEvent::Response {
                key,
                kind,
                ends,
                code,
            } => OrderEvent::Response {
                key: key.as_bytes(),
                kind: *kind,
                ends: ends.as_bytes(),
                code: *code,
            },
        }
    }
}

/// What one packet meant: at most one order event and at most one session fact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub event: Option<OuchEvent>,
    pub fact: Option<SessionFact>,
}

/// The order-layer state of one TCP connection of an OUCH session. What must outlive the
/// connection is in the [`SessionBook`] the caller lends per packet.
#[derive(Debug)]
pub struct OuchConnection {
    version: Version,
    /// The Login Request's username, until (and after) the Login Accepted.
    username: Key,
    /// The logical session, from the Login Accepted on.
    name: Option<SessionName>,
    /// The implicit number of the host's next `S` packet.
    next_sequence: u64,
    logged_in_ns: Option<u64>,
    counters: OuchCounters,
}

impl OuchConnection {
    pub fn new(version: Version) -> Self {
        OuchConnection {
            version,
            username: Key::default(),
            name: None,
            next_sequence: 0,
            logged_in_ns: None,
            counters: OuchCounters::default(),
        }
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// The logical session this connection carries, once logged in.
    pub fn session(&self) -> Option<&SessionName> {
        self.name.as_ref()
    }

    /// The capture time of the last Login Accepted.
    pub fn logged_in_ns(&self) -> Option<u64> {
        self.logged_in_ns
    }

    /// The implicit number the host's next `S` packet will have, once logged in.
    pub fn next_sequence(&self) -> Option<u64> {
        self.name.map(|_| self.next_sequence)
    }

    pub fn counters(&self) -> &OuchCounters {
        &self.counters
    }

    /// Reads one framed SoupBinTCP packet (length prefix included) sent by `side`,
    /// captured at `ts_ns`, and says what it means. Packets of both directions come in
    /// capture order. Bad input is counted, never a panic.
    pub fn on_packet(
        &mut self,
        book: &mut SessionBook,
        side: Side,
        frame: &[u8],
        ts_ns: u64,
    ) -> Outcome {
        let Ok(packet) = soupbin::decode(frame) else {
            self.counters.soupbin_undecodable_packets += 1;
            return Outcome::default();
        };
        if sender(&packet).is_some_and(|s| s != side) {
            self.counters.soupbin_wrong_side_packets += 1;
            return Outcome::default();
        }
        let fact = |f| Outcome {
            event: None,
            fact: Some(f),
        };
        let c = &mut self.counters;
        match packet {
            SoupPacket::Debug { .. } => {
                c.soupbin_debug_packets += 1;
                Outcome::default()
            }
            SoupPacket::LoginRequest {
                username,
                requested_session,
                requested_sequence,
            } => {
                c.soupbin_login_requests += 1;
                self.username = Key::new(username);
                fact(SessionFact::LoginRequested {
                    username: self.username,
                    requested_session: Key::new(requested_session),
                    requested_sequence,
                })
            }
            SoupPacket::LoginAccepted {
                session,
                next_sequence,
            } => match next_sequence {
                Some(n) => fact(self.login_accepted(book, Key::new(session), n, ts_ns)),
                None => {
                    c.soupbin_undecodable_packets += 1;
                    Outcome::default()
                }
            },
            SoupPacket::LoginRejected { reason } => {
                c.soupbin_login_rejects += 1;
                fact(SessionFact::LoginRejected { reason })
            }
            SoupPacket::ServerHeartbeat | SoupPacket::ClientHeartbeat => {
                c.soupbin_heartbeats += 1;
                fact(SessionFact::Heartbeat)
            }
            SoupPacket::EndOfSession => {
                c.soupbin_end_of_session += 1;
                fact(SessionFact::EndOfSession)
            }
            SoupPacket::LogoutRequest => {
                c.soupbin_logouts += 1;
                fact(SessionFact::LogoutRequested)
            }
            SoupPacket::SequencedData { message } => self.sequenced(book, message),
            SoupPacket::UnsequencedData { message } => {
                let Some(name) = self.name else {
                    c.soupbin_before_login += 1;
                    return Outcome::default();
                };
                let orders = &mut book.entry(name).orders;
                Outcome {
                    event: orders.request(self.version, message, c),
                    fact: None,
                }
            }
        }
    }

    fn login_accepted(
        &mut self,
        book: &mut SessionBook,
        session: Key,
        next_sequence: u64,
        ts_ns: u64,
    ) -> SessionFact {
        self.counters.soupbin_logins += 1;
        let name = SessionName {
            session,
            username: self.username,
        };
        let s = book.entry(name);
        let resumed = s.highest_sequence > 0;
        let mut gap_packets = 0;
        if resumed && next_sequence > s.highest_sequence.saturating_add(1) {
            gap_packets = next_sequence - s.highest_sequence - 1;
            s.missing.push((s.highest_sequence + 1, next_sequence - 1));
            self.counters.soupbin_sequence_gaps += 1;
            // Saturates: a login's 20 digits can skip nearly 2^64 packets.
            let c = &mut self.counters.soupbin_sequence_gap_packets;
            *c = c.saturating_add(gap_packets);
        }
        self.name = Some(name);
        self.next_sequence = next_sequence;
        self.logged_in_ns = Some(ts_ns);
        SessionFact::LoggedIn {
            name,
            next_sequence,
            resumed,
            gap_packets,
        }
    }

    fn sequenced(&mut self, book: &mut SessionBook, message: &[u8]) -> Outcome {
        let Some(name) = self.name else {
            self.counters.soupbin_before_login += 1;
            return Outcome::default();
        };
        let sequence = self.next_sequence;
        // No number follows 2^64 - 1: the packets after it read as its replays.
        self.next_sequence = sequence.saturating_add(1);
        let s = book.entry(name);
        let numbered = s.number(sequence);
        let fact = Some(SessionFact::Sequenced {
            sequence,
            replayed: numbered != Numbered::New,
            recovered: numbered == Numbered::Recovered,
        });
        match numbered {
            Numbered::New => {}
            Numbered::Replayed => {
                self.counters.soupbin_replayed_packets += 1;
                return Outcome { event: None, fact };
            }
            Numbered::Recovered => {
                // Its time is the replay's: it would time its request by the reconnect.
                self.counters.soupbin_replayed_packets += 1;
                self.counters.soupbin_recovered_packets += 1;
                s.orders.response(self.version, message, &mut self.counters);
                return Outcome { event: None, fact };
            }
        }
        self.counters.soupbin_sequenced_packets += 1;
        Outcome {
            event: s.orders.response(self.version, message, &mut self.counters),
            fact,
        }
    }
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

/// The side that sends a packet (`None`: debug, either).
fn sender(packet: &SoupPacket<'_>) -> Option<Side> {
    match packet {
        SoupPacket::Debug { .. } => None,
        SoupPacket::LoginAccepted { .. }
        | SoupPacket::LoginRejected { .. }
        | SoupPacket::ServerHeartbeat
        | SoupPacket::SequencedData { .. }
        | SoupPacket::EndOfSession => Some(Side::Host),
        SoupPacket::LoginRequest { .. }
        | SoupPacket::UnsequencedData { .. }
        | SoupPacket::ClientHeartbeat
        | SoupPacket::LogoutRequest => Some(Side::Client),
    }
}

/// An open order: its shares still open (`None`: not known, its Enter never seen) and
/// whether a cancel or a modify of it waits for its answer.
#[derive(Clone, Copy, Debug, Default)]
struct Order {
    open: Option<u32>,
    cancel_pending: bool,
    modify_pending: bool,
}

/// A logical session's orders: what survives its reconnects.
#[derive(Debug, Default)]
pub(crate) struct OrderBook {
    /// Orders not ended, by key.
    orders: HashMap<Key, Order>,
    /// Every order key seen (requests' and responses'): a 4.2 token seen again is a
    /// resend; a response to a key never seen is about an order this run missed.
    seen: HashSet<Key>,
    /// The highest 5.0 UserRefNum seen.
    last_number: Option<u32>,
}

/// `key` with `mark` after it.
fn marked(key: Key, mark: &[u8]) -> Key {
    debug_assert!(key.as_bytes().len() + mark.len() <= KEY_CAPACITY);
    let mut k = key;
    k.push(mark);
    k
}

impl OrderBook {
    pub(crate) fn open_orders(&self) -> usize {
        self.orders.len()
    }

    /// A client `U` packet's message.
    pub(crate) fn request(
        &mut self,
        version: Version,
        message: &[u8],
        c: &mut OuchCounters,
    ) -> Option<OuchEvent> {
        let request = match version {
            Version::Ouch42 => ouch42::decode_request(message).map(|m| request42(&m)),
            Version::Ouch50 => ouch50::decode_request(message).map(|m| request50(&m)),
        };
        let request = match request {
            Ok(Some(r)) => r,
            Ok(None) => {
                c.ouch_other_messages += 1;
                return None;
            }
            Err(_) => {
                c.ouch_undecodable_messages += 1;
                return None;
            }
        };
        // The message type letters (both versions): Enter, Replace, Cancel, Modify.
        let code = ResponseCode::of(match request {
            Request::Enter { .. } => b"O",
            Request::Replace { .. } => b"U",
            Request::Cancel { .. } => b"X",
            Request::Modify { .. } => b"M",
        });
        let (request_type, key, resend) = match request {
            Request::Enter {
                key,
                number,
                shares,
            } => (
                RequestType::NewOrder,
                key,
                self.new_key(key, number, shares),
            ),
            Request::Replace {
                key,
                number,
                shares,
                ..
            } => (RequestType::Replace, key, self.new_key(key, number, shares)),
            Request::Cancel { order } => {
                let o = self.orders.entry(order).or_default();
                let resend = std::mem::replace(&mut o.cancel_pending, true);
                (RequestType::Cancel, marked(order, CANCEL_MARK), resend)
            }
            Request::Modify { order } => {
                let o = self.orders.entry(order).or_default();
                let resend = std::mem::replace(&mut o.modify_pending, true);
                (RequestType::Replace, marked(order, MODIFY_MARK), resend)
            }
        };
        if resend {
            c.ouch_resent_requests += 1;
        }
        Some(OuchEvent::Request {
            request_type,
            key,
            resend,
            code,
        })
    }

    /// Records a new order's key; `true` if it is a resend (a token seen before, a
    /// UserRefNum not above the last), which leaves the order's state as it was.
    fn new_key(&mut self, key: Key, number: Option<u32>, shares: u32) -> bool {
        let resend = match number {
            Some(n) => self.last_number.is_some_and(|last| n <= last),
            None => self.seen.contains(&key),
        };
        self.see(key, number);
        if !resend {
            self.orders.insert(
                key,
                Order {
                    open: Some(shares),
                    ..Order::default()
                },
            );
        }
        resend
    }

    fn see(&mut self, key: Key, number: Option<u32>) {
        self.seen.insert(key);
        if let Some(n) = number {
            self.last_number = Some(self.last_number.map_or(n, |l| l.max(n)));
        }
    }

    /// The order `key` a response is about; counted when the run never saw it.
    fn order(&mut self, key: Key, c: &mut OuchCounters) -> Order {
        if !self.seen.contains(&key) {
            c.ouch_unknown_order_responses += 1;
            self.seen.insert(key);
        }
        self.orders.get(&key).copied().unwrap_or_default()
    }

    /// A host `S` packet's message (a new one, not a replay).
    pub(crate) fn response(
        &mut self,
        version: Version,
        message: &[u8],
        c: &mut OuchCounters,
    ) -> Option<OuchEvent> {
        let response = match version {
            Version::Ouch42 => ouch42::decode_response(message).map(|m| response42(&m)),
            Version::Ouch50 => ouch50::decode_response(message).map(|m| response50(&m)),
        };
        let (response, letter) = match response {
            Ok(Some(r)) => r,
            Ok(None) => {
                c.ouch_other_messages += 1;
                return None;
            }
            Err(_) => {
                c.ouch_undecodable_messages += 1;
                return None;
            }
        };
        let none = Key::default();
        let (key, kind, ends) = match response {
            Response::Accepted {
                key,
                number,
                shares,
            } => {
                if !self.seen.contains(&key) {
                    c.ouch_unknown_order_responses += 1;
                }
                self.see(key, number);
                let o = self.orders.entry(key).or_default();
                o.open.get_or_insert(shares);
                (key, ack(), none)
            }
            Response::Replaced {
                key,
                number,
                previous,
                shares,
            } => {
                if !self.seen.contains(&key) {
                    c.ouch_unknown_order_responses += 1;
                }
                self.see(key, number);
                self.orders.remove(&previous);
                let o = self.orders.entry(key).or_default();
                o.open.get_or_insert(shares);
                let kind = ResponseKind {
                    ends_original: true,
                    ..ack()
                };
                (key, kind, previous)
            }
            Response::Canceled { key, decrement } => {
                let o = self.order(key, c);
                let over = self.decrement(key, decrement, true);
                if o.cancel_pending {
                    if let Some(o) = self.orders.get_mut(&key) {
                        o.cancel_pending = false;
                    }
                    let kind = ResponseKind {
                        terminal: true,
                        ends_original: over,
                        ..ack()
                    };
                    (
                        marked(key, CANCEL_MARK),
                        kind,
                        if over { key } else { none },
                    )
                } else {
                    (key, venue(over), none)
                }
            }
            Response::AiqCanceled { key, decrement } => {
                self.order(key, c);
                let over = self.decrement(key, decrement, true);
                (key, venue(over), none)
            }
            Response::Executed { key, shares } => {
                self.order(key, c);
                let over = self.decrement(key, shares, false);
                let kind = ResponseKind {
                    fill: true,
                    terminal: over,
                    ..ResponseKind::default()
                };
                (key, kind, none)
            }
            Response::Rejected { key } => {
                self.order(key, c);
                self.orders.remove(&key);
                (key, rejected(), none)
            }
            Response::CancelPending { key } => {
                self.order(key, c);
                (marked(key, CANCEL_MARK), ack(), none)
            }
            Response::CancelReject { key } => {
                self.order(key, c);
                if let Some(o) = self.orders.get_mut(&key) {
                    o.cancel_pending = false;
                }
                (marked(key, CANCEL_MARK), rejected(), none)
            }
            Response::OrderModified { key, shares } => {
                self.order(key, c);
                if let Some(o) = self.orders.get_mut(&key) {
                    o.modify_pending = false;
                    o.open = Some(shares);
                }
                let kind = ResponseKind {
                    terminal: true,
                    ..ack()
                };
                (marked(key, MODIFY_MARK), kind, none)
            }
            Response::Unsolicited { key } => {
                self.order(key, c);
                let kind = ResponseKind {
                    unsolicited: true,
                    ..ResponseKind::default()
                };
                (key, kind, none)
            }
        };
        Some(OuchEvent::Response {
            key,
            kind,
            ends,
            code: ResponseCode::of(&[letter]),
        })
    }

    /// Takes `shares` off the order `key`'s open shares; `true` (and the order forgotten)
    /// when none are left. An order whose shares are not known ends on a cancel
    /// (`unknown_ends`), never on a fill.
    fn decrement(&mut self, key: Key, shares: u32, unknown_ends: bool) -> bool {
        let over = match self.orders.get_mut(&key) {
            Some(Order {
                open: Some(open), ..
            }) => {
                *open = open.saturating_sub(shares);
                *open == 0
            }
            _ => unknown_ends,
        };
        if over {
            self.orders.remove(&key);
        }
        over
    }
}

fn ack() -> ResponseKind {
    ResponseKind {
        ack: true,
        ..ResponseKind::default()
    }
}

fn rejected() -> ResponseKind {
    ResponseKind {
        ack: true,
        terminal: true,
        reject: true,
        ..ResponseKind::default()
    }
}

/// The venue's own cancel (an IOC's remainder, a supervisory or self-match cancel).
fn venue(over: bool) -> ResponseKind {
    ResponseKind {
        terminal: over,
        venue_initiated: true,
        ..ResponseKind::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_number_is_new_once_even_inside_a_gap() {
        use crate::session::Numbered::*;
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
