//! iLink 3's order layer: what each message of a connection means to the correlator, as
//! the seam's [`OrderEvent`] (at most one per message) plus a [`SessionFact`]. Pure logic:
//! the caller frames each direction (`sofh::SofhFramer`) and hands the messages of both
//! in capture order to [`Ilink3Connection::on_message`], with the run's [`SessionBook`].
//! docs/protocols.md ("CME iLink 3") states every rule, in short:
//!
//! - state is per UUID, not per TCP connection; a CME business message marked
//!   PossRetransFlag=1, or numbered at or below the highest seen of its UUID, is a replay
//!   and emits nothing;
//! - requests are keyed by their OrderRequestID (decimal), never ClOrdID: iLink 3 has no
//!   OrigClOrdID, a replace or cancel names its order by OrderID and has a request id of
//!   its own; responses answer the OrderRequestID they echo, fills the order's current
//!   entry (`book`).

use hashbrown::HashMap;

use fixscope_protocol::{OrderEvent, RequestType, ResponseCode, ResponseKind};

use crate::messages::{self, Message, Numbering, SessionFields};
use crate::schema;
use crate::session::{Ilink3Counters, Key, Numbered, SessionFact, SessionName};
use crate::Side;

mod book;
use book::OrderBook;

/// One message's order event, owned: [`Ilink3Event::order_event`] lends it as the seam's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ilink3Event {
    Request {
        request_type: RequestType,
        key: Key,
        resend: bool,
        /// The request's template id in decimal (`514`, `515`, `516`).
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

impl Ilink3Event {
    /// The seam's event, borrowing this one's keys.
    pub fn order_event(&self) -> OrderEvent<'_> {
        match self {
            Ilink3Event::Request {
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
            Ilink3Event::Response {
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

/// What one message meant: at most one order event and at most one session fact, and
/// the sender's own SendingTimeEpoch (ns since 1970) of a business message, for
/// app-to-wire figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub event: Option<Ilink3Event>,
    pub fact: Option<SessionFact>,
    pub sending_time_ns: Option<u64>,
}

impl Outcome {
    fn fact(f: SessionFact) -> Self {
        Outcome {
            fact: Some(f),
            ..Outcome::default()
        }
    }
}

/// The order-layer state of one TCP connection of an iLink 3 session. What must outlive
/// the connection is in the [`SessionBook`] the caller lends per message.
#[derive(Debug, Default)]
pub struct Ilink3Connection {
    /// The logical session: named by the latest Negotiate, Establish or EstablishmentAck,
    /// else by the first CME business message (which carries its UUID).
    name: Option<SessionName>,
    established_ns: Option<u64>,
    counters: Ilink3Counters,
}

impl Ilink3Connection {
    pub fn new() -> Self {
        Self::default()
    }

    /// The logical session this connection carries, once a message named it.
    pub fn session(&self) -> Option<&SessionName> {
        self.name.as_ref()
    }

    /// The capture time of the last EstablishmentAck.
    pub fn established_ns(&self) -> Option<u64> {
        self.established_ns
    }

    pub fn counters(&self) -> &Ilink3Counters {
        &self.counters
    }

    /// Reads one framed message (SOFH included) sent by `side`, captured at `ts_ns`, and
    /// says what it means. Messages of both directions come in capture order. Bad input
    /// is counted, never a panic.
    pub fn on_message(
        &mut self,
        book: &mut SessionBook,
        side: Side,
        frame: &[u8],
        ts_ns: u64,
    ) -> Outcome {
        let message = match messages::decode(frame) {
            Ok(m) => m,
            Err(_) => {
                self.counters.ilink3_undecodable_messages += 1;
                return Outcome::default();
            }
        };
        if message.sender().is_some_and(|s| s != side) {
            self.counters.ilink3_wrong_side_messages += 1;
            return Outcome::default();
        }
        let sending_time_ns = message.sending_time_ns();
        let mut out = self.dispatch(book, side, message, ts_ns);
        out.sending_time_ns = sending_time_ns;
        out
    }

    fn dispatch(&mut self, book: &mut SessionBook, side: Side, m: Message<'_>, ts: u64) -> Outcome {
        let c = &mut self.counters;
        match m {
            Message::Negotiate(s) => {
                c.ilink3_negotiate_requests += 1;
                self.name_session(book, s.uuid, s.firm);
                Outcome::fact(SessionFact::NegotiateRequested {
                    uuid: s.uuid,
                    firm: Key::new(s.firm),
                })
            }
            Message::NegotiationResponse(s) => {
                c.ilink3_negotiations += 1;
                Outcome::fact(SessionFact::Negotiated { uuid: s.uuid })
            }
            Message::NegotiationReject(s) => {
                c.ilink3_negotiation_rejects += 1;
                Outcome::fact(rejected(schema::negotiation_reject_502::ID, &s))
            }
            Message::Establish(s) => {
                c.ilink3_establish_requests += 1;
                let name = self.name_session(book, s.uuid, s.firm);
                Outcome::fact(SessionFact::EstablishRequested {
                    name,
                    next_seq: s.next_seq_no.unwrap_or(0),
                })
            }
            Message::EstablishmentAck(s) => Outcome::fact(self.established(book, &s, ts)),
            Message::EstablishmentReject(s) => {
                c.ilink3_establish_rejects += 1;
                Outcome::fact(rejected(schema::establishment_reject_505::ID, &s))
            }
            Message::Sequence(s) => {
                c.ilink3_sequences += 1;
                let next_seq = s.next_seq_no.unwrap_or(0);
                let gap_messages = match side {
                    Side::Host => book.entry(s.uuid).expect_next(next_seq, c),
                    Side::Client => 0,
                };
                Outcome::fact(SessionFact::Heartbeat {
                    from: side,
                    next_seq,
                    gap_messages,
                })
            }
            Message::Terminate(s) => {
                c.ilink3_terminates += 1;
                Outcome::fact(SessionFact::Terminated {
                    from: side,
                    error_codes: s.error_codes.unwrap_or(0),
                })
            }
            Message::RetransmitRequest(s) => {
                c.ilink3_retransmit_requests += 1;
                Outcome::fact(SessionFact::RetransmitRequested {
                    from_seq: s.from_seq_no.unwrap_or(0),
                    count: s.msg_count.unwrap_or(0),
                    last_uuid: s.last_uuid,
                })
            }
            Message::Retransmission(s) => {
                c.ilink3_retransmissions += 1;
                Outcome::fact(SessionFact::Retransmission {
                    from_seq: s.from_seq_no.unwrap_or(0),
                    count: s.msg_count.unwrap_or(0),
                    last_uuid: s.last_uuid,
                })
            }
            Message::RetransmitReject(s) => {
                c.ilink3_retransmit_rejects += 1;
                Outcome::fact(rejected(schema::retransmit_reject_510::ID, &s))
            }
            Message::NotApplied(s) => {
                c.ilink3_not_applied += 1;
                Outcome::fact(SessionFact::NotApplied {
                    from_seq: s.from_seq_no.unwrap_or(0),
                    count: s.msg_count.unwrap_or(0),
                })
            }
            Message::NewOrder(r) | Message::Replace(r) | Message::Cancel(r) => {
                let Some(name) = self.name else {
                    c.ilink3_before_establish += 1;
                    return Outcome::default();
                };
                c.ilink3_requests += 1;
                let (request_type, template) = match m {
                    Message::NewOrder(_) => {
                        (RequestType::NewOrder, schema::new_order_single_514::ID)
                    }
                    Message::Replace(_) => (
                        RequestType::Replace,
                        schema::order_cancel_replace_request_515::ID,
                    ),
                    _ => (RequestType::Cancel, schema::order_cancel_request_516::ID),
                };
                let code = book::code(template);
                let event = book
                    .entry(name.uuid)
                    .orders
                    .request(request_type, code, &r, c);
                Outcome {
                    event: Some(event),
                    ..Outcome::default()
                }
            }
            Message::BusinessReject(b) => {
                let n = Numbering {
                    seq_num: b.seq_num,
                    uuid: b.uuid,
                    poss_retrans: b.poss_retrans,
                };
                self.business(book, n, |orders, c| orders.business_reject(&b, c))
            }
            Message::Report(r) => {
                let n = Numbering {
                    seq_num: r.seq_num,
                    uuid: r.uuid,
                    poss_retrans: r.poss_retrans,
                };
                self.business(book, n, |orders, c| orders.report(&r, c))
            }
            Message::Other {
                numbered: Some(n), ..
            } => self.business(book, n, |_, _| None),
            Message::Other { numbered: None, .. } => {
                c.ilink3_other_messages += 1;
                Outcome::default()
            }
        }
    }

    /// Names the connection's logical session (and the UUID's Firm, when given).
    fn name_session(&mut self, book: &mut SessionBook, uuid: u64, firm: &[u8]) -> SessionName {
        let s = book.entry(uuid);
        if !firm.is_empty() {
            s.firm = Key::new(firm);
        }
        let name = SessionName { uuid, firm: s.firm };
        self.name = Some(name);
        name
    }

    fn established(
        &mut self,
        book: &mut SessionBook,
        s: &SessionFields<'_>,
        ts: u64,
    ) -> SessionFact {
        self.counters.ilink3_establishments += 1;
        let next_seq = s.next_seq_no.unwrap_or(0);
        let session = book.entry(s.uuid);
        // Seen before in this run: established, or numbered by CME messages already.
        let resumed = session.established || session.highest.is_some();
        session.established = true;
        let gap_messages = session.expect_next(next_seq, &mut self.counters);
        let name = self.name_session(book, s.uuid, b"");
        self.established_ns = Some(ts);
        SessionFact::Established {
            name,
            next_seq,
            resumed,
            gap_messages,
        }
    }

    /// A CME business message: numbered, then (when new, or recovered for its state
    /// only) read by `read`.
    fn business<F>(&mut self, book: &mut SessionBook, n: Numbering, read: F) -> Outcome
    where
        F: FnOnce(&mut OrderBook, &mut Ilink3Counters) -> Option<Ilink3Event>,
    {
        if self.name.is_none() {
            self.name_session(book, n.uuid, b"");
        }
        let c = &mut self.counters;
        let s = book.entry(n.uuid);
        let numbered = s.number(n.seq_num, n.poss_retrans, c);
        let fact = Some(SessionFact::Sequenced {
            seq: n.seq_num,
            replayed: numbered != Numbered::New,
            recovered: numbered == Numbered::Recovered,
        });
        let event = match numbered {
            Numbered::New => {
                c.ilink3_business_messages += 1;
                read(&mut s.orders, c)
            }
            Numbered::Replayed => {
                c.ilink3_replayed_messages += 1;
                None
            }
            Numbered::Recovered => {
                // Its time is the replay's: it would time its request by the reconnect.
                c.ilink3_replayed_messages += 1;
                c.ilink3_recovered_messages += 1;
                let _ = read(&mut s.orders, &mut Ilink3Counters::default());
                None
            }
        };
        Outcome {
            event,
            fact,
            ..Outcome::default()
        }
    }
}

fn rejected(template_id: u16, s: &SessionFields<'_>) -> SessionFact {
    SessionFact::Rejected {
        template_id,
        error_codes: s.error_codes.unwrap_or(0),
    }
}

/// What a run knows of one logical session (UUID), across its TCP connections.
#[derive(Debug, Default)]
pub(crate) struct LogicalSession {
    pub(crate) firm: Key,
    /// An EstablishmentAck was seen for it.
    pub(crate) established: bool,
    /// The highest CME sequence number taken as seen (`None`: nothing yet).
    pub(crate) highest: Option<u32>,
    /// Ranges (first, last) of CME numbers a gap skipped: never seen, so a later replay
    /// of them is recovered.
    pub(crate) missing: Vec<(u32, u32)>,
    pub(crate) orders: OrderBook,
}

impl LogicalSession {
    /// CME says its next business message is `next` (EstablishmentAck, Sequence506): a
    /// number past the highest seen + 1 is a gap, and the numbers below it are taken as
    /// sent. The first such word of a UUID only sets where its numbering starts (what
    /// CME sent before this run looked is no gap). Returns the messages skipped.
    pub(crate) fn expect_next(&mut self, next: u32, c: &mut Ilink3Counters) -> u64 {
        let Some(last) = next.checked_sub(1) else {
            return 0;
        };
        match self.highest {
            None => {
                self.highest = Some(last);
                0
            }
            Some(h) if last > h => self.skip(h, last, c),
            Some(_) => 0,
        }
    }

    /// Numbers h+1 ..= last were skipped: a gap.
    fn skip(&mut self, h: u32, last: u32, c: &mut Ilink3Counters) -> u64 {
        let skipped = u64::from(last - h);
        if skipped > 0 {
            self.missing.push((h + 1, last));
            c.ilink3_sequence_gaps += 1;
            c.ilink3_sequence_gap_messages += skipped;
        }
        self.highest = Some(last);
        skipped
    }

    /// What the CME business message numbered `seq` is to this run (and takes it as
    /// seen). Above the highest: new, unless marked a retransmission (a replay of one
    /// this run never saw sent: recovered); a jump past highest + 1 is a gap either way.
    /// At or below: recovered inside a skipped range, else replayed.
    pub(crate) fn number(
        &mut self,
        seq: u32,
        poss_retrans: bool,
        c: &mut Ilink3Counters,
    ) -> Numbered {
        match self.highest {
            Some(h) if seq <= h => self.fill_missing(seq),
            highest => {
                if let Some(h) = highest {
                    self.skip(h, seq - 1, c);
                }
                self.highest = Some(seq);
                if poss_retrans {
                    Numbered::Recovered
                } else {
                    Numbered::New
                }
            }
        }
    }

    fn fill_missing(&mut self, seq: u32) -> Numbered {
        let Some(i) = self
            .missing
            .iter()
            .position(|&(first, last)| (first..=last).contains(&seq))
        else {
            return Numbered::Replayed;
        };
        let (first, last) = self.missing[i];
        match (seq == first, seq == last) {
            (true, true) => {
                self.missing.swap_remove(i);
            }
            (true, false) => self.missing[i].0 = seq + 1,
            (false, true) => self.missing[i].1 = seq - 1,
            (false, false) => {
                self.missing[i].1 = seq - 1;
                self.missing.push((seq + 1, last));
            }
        }
        Numbered::Recovered
    }
}

/// The logical sessions of a run, by UUID: shared by every connection, lent to each per
/// message.
#[derive(Debug, Default)]
pub struct SessionBook {
    sessions: HashMap<u64, LogicalSession>,
}

impl SessionBook {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many logical sessions (UUIDs) were seen.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The highest CME sequence number seen on `uuid` (0: none, or not a UUID seen).
    pub fn highest_sequence(&self, uuid: u64) -> u32 {
        self.sessions
            .get(&uuid)
            .and_then(|s| s.highest)
            .unwrap_or(0)
    }

    /// How many orders of `uuid` are still open (entered, not ended).
    pub fn open_orders(&self, uuid: u64) -> usize {
        self.sessions
            .get(&uuid)
            .map_or(0, |s| s.orders.open_orders())
    }

    pub(crate) fn entry(&mut self, uuid: u64) -> &mut LogicalSession {
        self.sessions.entry(uuid).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_number_is_new_once_even_inside_a_gap() {
        use crate::session::Numbered::*;
        let mut c = Ilink3Counters::default();
        let mut s = LogicalSession::default();
        let seen: Vec<_> = [1, 2, 2, 1].map(|n| s.number(n, false, &mut c)).into();
        assert_eq!(seen, [New, New, Replayed, Replayed]);
        assert_eq!(s.number(8, false, &mut c), New, "3..=7 skipped");
        assert_eq!(
            (c.ilink3_sequence_gaps, c.ilink3_sequence_gap_messages),
            (1, 5)
        );
        for n in [5, 3, 7, 4, 6] {
            assert_eq!(s.number(n, true, &mut c), Recovered, "{n}");
            assert_eq!(s.number(n, true, &mut c), Replayed, "{n} again");
        }
        assert!(s.missing.is_empty());
        assert_eq!(
            s.number(9, true, &mut c),
            Recovered,
            "a replay above the highest"
        );
        assert_eq!(s.number(9, false, &mut c), Replayed);
        assert_eq!(s.expect_next(10, &mut c), 0);
        assert_eq!(s.expect_next(13, &mut c), 3, "10..=12 skipped");
        assert_eq!(s.number(11, true, &mut c), Recovered);
    }
}
