//! The FIX session layer: who talks (sessions are their CompIDs, not a TCP connection),
//! the session's own messages, its sequence numbers, and what they mean for the orders.
//!
//! - A **session** is its (BeginString, SenderCompID, TargetCompID) as the client sends
//!   them — FIX's session identity: the same CompIDs on FIX.4.2 and FIX.4.4 (a migration)
//!   are two sessions, each with its own sequence numbers and ClOrdIDs. Sub and location
//!   IDs (50/57, 142/143) name desks and traders within a session and may change from
//!   message to message; an engine's SessionQualifier is its own configuration, never on
//!   the wire: neither is part of it. A reconnect continues the session. A connection
//!   whose messages carry no CompIDs is a session of its own (anonymous), ended by its
//!   close.
//! - An **epoch** begins at a Logon with ResetSeqNumFlag (141=Y) or a SequenceReset-Reset
//!   (35=4 without 123=Y): sequence numbers restart and ClOrdIDs may be reused, so the
//!   correlator's scope is (session, epoch) — requests are never paired across epochs, and
//!   those of the ended epoch are accounted `unanswered_closed`.
//! - **Replays are not orders**: a PossDup (43=Y) under a (session, direction, MsgSeqNum)
//!   already seen is a replay (`possdup_requests`/`possdup_responses`): not a request, not a
//!   duplicate, never a first response. A PossDup never seen is the first sighting and
//!   counts as what it is. A PossResend (97=Y) carries a new MsgSeqNum: a request is a
//!   replay when its ClOrdID is (or was recently) tracked. The flag alone decides nothing.
//! - A TCP connection closing does not end a named session: its pending requests can still
//!   be answered after the reconnect (they stay `pending`, and `-t` still alerts).
//! - **A TestRequest is answered on its own connection**: by the other side's Heartbeat with
//!   its TestReqID (112), first in, first out among equal ids (QuickFIX sends 112=TEST every
//!   time). When the connection ends (close, RST, forgotten, or the session's next
//!   connection binds) its TestRequests still waiting are `test_requests_unanswered`, once:
//!   a TestRequest is what an engine sends a silent peer before it disconnects, so that is
//!   the true outcome, and the next connection's Heartbeats never answer them. A Heartbeat
//!   whose 112 matches no TestRequest waiting is no round trip (only `heartbeats`).
//!
//! | file | concern |
//! |---|---|
//! | `counters.rs` | the counters (the contract's names) |
//! | `fields.rs` | the fields of administrative messages |
//! | `sequence.rs` | MsgSeqNums seen and expected, per direction and epoch |
//! | `health.rs` | what reports show: per-session state and alarms, the run's figures |

mod fields;
pub mod figures;
pub mod health;
mod sequence;
pub mod table;

use std::collections::VecDeque;

use hashbrown::HashMap;

pub use fields::AdminFields;
pub use fixscope_model::counters::session::SessionCounters;
pub use health::{
    SessionAlarms, SessionHealth, SessionLayerStats, DEFAULT_TEST_REQUEST_PATIENCE_NS,
};
pub use sequence::{SeqRanges, SeqVerdict, SequenceTracker};

use crate::correlate::{Correlator, MessageFacts, RequestType};
use fixscope_fix::framing::FramedMessage;
use fixscope_model::segment::{ConnectionKey, Direction};
use health::side;
use table::{SessionBook, SessionTable};

/// A connection's session, bound at its first FIX message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The session's id (as in the sessions table).
    pub session: u64,
    /// No CompIDs: the connection is the session.
    pub anonymous: bool,
    /// The connection's number in its session (1, 2, …): TestRequests are answered on
    /// their own connection only.
    pub connection: u32,
}

/// What the pipeline does with a message after the session layer saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'m> {
    /// A request or response: to the correlator.
    Order,
    /// A replay: counted, and nothing more.
    Replay,
    /// A reject from the server side that may answer a request: by the request's MsgSeqNum
    /// (RefSeqNum 45) or, for a BusinessMessageReject without it, by its BusinessRejectRefID
    /// (379) as the key of a request of the type RefMsgType (372) names. Never a reject of
    /// a message that is no request (372 = H, AF, …) nor of a PossDup replay.
    Reject {
        ref_seq: Option<u32>,
        ref_id: &'m [u8],
        /// The request type 372 names (`None`: absent; then only 45 can name a request).
        ref_type: Option<RequestType>,
    },
    /// Anything else (administrative messages, other application messages).
    Other,
}

/// MsgSeqNums a side replayed with PossDupFlag, as ranges (a resend replays runs of them),
/// the newest kept: a bounded memory, enough for the rejects that follow a resend.
#[derive(Debug, Default)]
struct ReplayedSeqs {
    ranges: VecDeque<(u32, u32)>,
}

/// Runs of replayed numbers remembered per session.
const MAX_REPLAYED_RANGES: usize = 64;

impl ReplayedSeqs {
    fn add(&mut self, seq: u32) {
        match self.ranges.back_mut() {
            Some((from, to)) if seq >= *from && seq <= to.saturating_add(1) => *to = (*to).max(seq),
            _ => {
                if self.ranges.len() >= MAX_REPLAYED_RANGES {
                    self.ranges.pop_front();
                }
                self.ranges.push_back((seq, seq));
            }
        }
    }

    fn contains(&self, seq: u32) -> bool {
        self.ranges
            .iter()
            .any(|&(from, to)| (from..=to).contains(&seq))
    }
}

/// Named sessions kept at most; later identities are handled as anonymous sessions.
pub const MAX_NAMED_SESSIONS: usize = 1 << 16;
/// Unanswered TestRequests remembered per side (the oldest are dropped beyond it).
const MAX_OUTSTANDING_TEST_REQUESTS: usize = 1024;
pub use crate::correlate::{scope_of, session_of};

/// A named session's identity: (BeginString, client's CompID, server's CompID).
pub type SessionIdentity = (Box<[u8]>, Box<[u8]>, Box<[u8]>);

/// A TestRequest waiting for the Heartbeat with its TestReqID.
struct PendingTestRequest {
    sent_ns: u64,
    /// The connection it was sent on ([`Binding::connection`]).
    connection: u32,
    /// TestReqID (112).
    id: Box<[u8]>,
}

/// The protocol state of one session.
#[derive(Default)]
struct SessionState {
    epoch: u64,
    /// Connections bound so far: the latest one's [`Binding::connection`].
    connections: u32,
    /// Per side: client (request direction), server.
    sequences: [SequenceTracker; 2],
    /// Each side's TestRequests still unanswered, oldest first.
    test_requests: [VecDeque<PendingTestRequest>; 2],
    /// The request side's MsgSeqNums last carried by a PossDup replay: a reject naming
    /// one (45) rejects the replay, not the original order.
    replayed_requests: ReplayedSeqs,
}

/// The session layer of one pipeline (all its state: no globals, so connections sharded by
/// (client, server, port) keep every session in one pipeline).
#[derive(Default)]
pub struct SessionLayer {
    by_identity: HashMap<SessionIdentity, u64>,
    /// Session `id`'s state at index `id - 1` (ids are handed out in order, and every
    /// message looks its session up: an index, not a hash); `None` once an anonymous
    /// session ended.
    states: Vec<Option<Box<SessionState>>>,
    pub counters: SessionCounters,
}

impl SessionLayer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The session of the connection whose message `facts` is (`message` its bytes, for
    /// the BeginString): bound at the connection's first message (opening the session in
    /// `stats` when new).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &mut self,
        current: &mut Option<Binding>,
        facts: &MessageFacts,
        message: &[u8],
        direction: Direction,
        conn: ConnectionKey,
        next_session: &mut u64,
        sessions: &mut SessionTable,
    ) -> Binding {
        match *current {
            Some(b) => b,
            None => self.bind_new(
                current,
                identity(facts, message, direction),
                conn,
                next_session,
                sessions,
            ),
        }
    }

    #[cold]
    fn bind_new(
        &mut self,
        current: &mut Option<Binding>,
        identity: Option<SessionIdentity>,
        conn: ConnectionKey,
        next_session: &mut u64,
        sessions: &mut SessionTable,
    ) -> Binding {
        let identity = identity.filter(|id| {
            self.by_identity.len() < MAX_NAMED_SESSIONS || self.by_identity.contains_key(id)
        });
        let named = identity.is_some();
        let states = &mut self.states;
        let mut open = |sessions: &mut SessionTable| {
            let id = *next_session;
            *next_session += 1;
            sessions.open(id, conn);
            let i = (id - 1) as usize;
            if states.len() <= i {
                states.resize_with(i + 1, || None);
            }
            states[i] = Some(Box::default());
            id
        };
        let session = if let Some(key) = identity {
            match self.by_identity.get(&key) {
                Some(&id) => {
                    if let Some(s) = sessions.get_mut(id) {
                        s.connection = conn;
                    }
                    id
                }
                None => {
                    let id = open(sessions);
                    if let Some(s) = sessions.get_mut(id) {
                        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                        s.begin_string = text(&key.0);
                        s.sender_comp_id = text(&key.1);
                        s.target_comp_id = text(&key.2);
                    }
                    self.by_identity.insert(key, id);
                    id
                }
            }
        } else {
            open(sessions)
        };
        let mut health = sessions.get_mut(session).map(|s| &mut s.health);
        if let Some(h) = health.as_deref_mut() {
            h.connections += 1;
        }
        let counters = &mut self.counters;
        let connection = match self.states.get_mut((session as usize).wrapping_sub(1)) {
            Some(Some(state)) => {
                state.connections += 1;
                let latest = state.connections;
                // A new Logon on a new connection: the earlier connections ended.
                end_test_requests(state, |c| c != latest, counters, health);
                latest
            }
            _ => 1,
        };
        let binding = Binding {
            session,
            anonymous: !named,
            connection,
        };
        *current = Some(binding);
        binding
    }

    fn state(&self, session: u64) -> Option<&SessionState> {
        self.states
            .get((session as usize).wrapping_sub(1))
            .and_then(|s| s.as_deref())
    }

    fn state_mut(&mut self, session: u64) -> Option<&mut SessionState> {
        self.states
            .get_mut((session as usize).wrapping_sub(1))
            .and_then(|s| s.as_deref_mut())
    }

    /// The correlator scope of the binding's session now.
    #[inline]
    pub fn scope(&self, b: Binding) -> u64 {
        scope_of(b.session, self.state(b.session).map_or(0, |s| s.epoch))
    }

    /// Judges one framed message of session `b`: counts it, follows the session's state,
    /// and says what the pipeline does with it.
    #[inline]
    pub fn on_message<'m>(
        &mut self,
        b: Binding,
        direction: Direction,
        facts: &MessageFacts,
        msg: &FramedMessage<'m>,
        correlator: &mut Correlator,
        book: SessionBook<'_>,
    ) -> Action<'m> {
        let SessionBook {
            table: sessions,
            layer,
        } = book;
        let ts_ns = msg.last_byte_ts_ns;
        let me = side(direction);
        layer.rate.observe(ts_ns);
        let counters = &mut self.counters;
        let Some(state) = self
            .states
            .get_mut((b.session as usize).wrapping_sub(1))
            .and_then(|s| s.as_deref_mut())
        else {
            return Action::Other;
        };
        let mut health = sessions.get_mut(b.session).map(|s| &mut s.health);
        if let Some(h) = health.as_deref_mut() {
            h.rate.observe(ts_ns);
            h.last_message_ns[me] = Some(ts_ns);
        }
        let mut count = |f: fn(&mut SessionCounters), health: &mut Option<&mut SessionHealth>| {
            f(counters);
            if let Some(h) = health.as_deref_mut() {
                f(&mut h.counters);
            }
        };
        let mt = facts.msg_type;
        let is_request = RequestType::from_msg_type(mt).is_some();
        let is_response = matches!(mt, b"8" | b"9");
        let admin = matches!(mt, b"A" | b"5" | b"0" | b"1" | b"2" | b"3" | b"4" | b"j");
        let fields = if admin {
            AdminFields::read(msg.bytes)
        } else {
            AdminFields::default()
        };
        let seq = u64::from(facts.msg_seq_num);
        let mut new_epoch = |state: &mut SessionState, health: &mut Option<&mut SessionHealth>| {
            correlator.close_unanswered(scope_of(b.session, state.epoch));
            state.epoch += 1;
            state.replayed_requests = ReplayedSeqs::default();
            // TestRequests are not of an epoch but of a connection: they stay answerable.
            if let Some(h) = health.as_deref_mut() {
                h.resets += 1;
            }
        };
        match mt {
            b"A" if (fields.reset_seq_num || seq == 1) && !state.sequences[me].is_fresh() => {
                // The side's numbers restart — 141=Y, or a Logon with 34=1 (a new trading
                // day without the flag): a new epoch (the answering Logon finds its side
                // fresh and starts none).
                new_epoch(state, &mut health);
                for s in &mut state.sequences {
                    s.reset(None);
                }
            }
            b"4" if !fields.gap_fill => {
                count(|c| c.sequence_resets += 1, &mut health);
                new_epoch(state, &mut health);
                state.sequences[me].reset(fields.new_seq_no.map(u64::from));
                return Action::Other;
            }
            b"4" => {
                count(|c| c.gap_fills += 1, &mut health);
                state.sequences[me].gap_fill(seq, fields.new_seq_no.map_or(0, u64::from));
                return Action::Other;
            }
            _ => {}
        }
        match state.sequences[me].observe(seq, facts.poss_dup) {
            SeqVerdict::Replay => {
                if me == 0 {
                    state.replayed_requests.add(facts.msg_seq_num);
                }
                if is_request {
                    count(|c| c.possdup_requests += 1, &mut health);
                } else if is_response || matches!(mt, b"3" | b"j") {
                    count(|c| c.possdup_responses += 1, &mut health);
                }
                return Action::Replay;
            }
            SeqVerdict::Gap => count(|c| c.sequence_gaps += 1, &mut health),
            SeqVerdict::SkipAtCaptureHole => {
                count(|c| c.sequence_skips_at_capture_holes += 1, &mut health)
            }
            SeqVerdict::New => {}
        }
        if is_request
            && facts.poss_resend
            && correlator.knows_request(scope_of(b.session, state.epoch), facts)
        {
            count(|c| c.possdup_requests += 1, &mut health);
            return Action::Replay;
        }
        let other = 1 - me;
        match mt {
            _ if is_request => Action::Order,
            b"8" => {
                if facts.exec_type == Some(b'8') {
                    count(|c| c.order_rejects += 1, &mut health);
                }
                Action::Order
            }
            b"9" => {
                count(|c| c.cancel_rejects += 1, &mut health);
                Action::Order
            }
            b"A" => {
                count(|c| c.logons += 1, &mut health);
                if let Some(h) = health.as_deref_mut() {
                    h.logon(direction, fields.heart_bt_int);
                }
                Action::Other
            }
            b"5" => {
                count(|c| c.logouts += 1, &mut health);
                if let Some(h) = health.as_deref_mut() {
                    h.logged_out();
                }
                Action::Other
            }
            b"0" => {
                count(|c| c.heartbeats += 1, &mut health);
                if let Some(h) = health.as_deref_mut() {
                    h.last_heartbeat_ns[me] = Some(ts_ns);
                }
                // A Heartbeat with TestReqID answers the other side's oldest TestRequest of
                // that id on this connection; one matching none is no round trip.
                if !fields.test_req_id.is_empty() {
                    let q = &mut state.test_requests[other];
                    let answered = q
                        .iter()
                        .position(|t| t.connection == b.connection && *t.id == *fields.test_req_id);
                    if let Some(t) = answered.and_then(|i| q.remove(i)) {
                        match msg.first_byte_ts_ns.checked_sub(t.sent_ns) {
                            Some(ns) => layer.test_request_rtt.record(ns),
                            None => layer.test_request_rtt_time_reversed += 1,
                        }
                        let oldest = oldest_test_request(state);
                        if let Some(h) = sessions.get_mut(b.session) {
                            h.health.oldest_unanswered_test_request_ns = oldest;
                        }
                    }
                }
                Action::Other
            }
            b"1" => {
                count(|c| c.test_requests += 1, &mut health);
                let q = &mut state.test_requests[me];
                if q.len() >= MAX_OUTSTANDING_TEST_REQUESTS {
                    q.pop_front();
                }
                q.push_back(PendingTestRequest {
                    sent_ns: ts_ns,
                    connection: b.connection,
                    id: fields.test_req_id.into(),
                });
                if let Some(h) = health.as_deref_mut() {
                    h.oldest_unanswered_test_request_ns = oldest_test_request(state);
                }
                Action::Other
            }
            b"2" => {
                count(|c| c.resend_requests += 1, &mut health);
                Action::Other
            }
            b"3" | b"j" => {
                if mt == b"3" {
                    count(|c| c.session_rejects += 1, &mut health);
                } else {
                    count(|c| c.business_rejects += 1, &mut health);
                }
                match fields.reject_reason {
                    Some(code) => {
                        let by_code = if mt == b"3" {
                            &mut layer.session_reject_reasons
                        } else {
                            &mut layer.business_reject_reasons
                        };
                        *by_code.entry(code).or_default() += 1;
                    }
                    None => layer.rejects_without_reason += 1,
                }
                // FIX's own fields say what was rejected: RefMsgType names a request type
                // (or is absent), and RefSeqNum is not a replay's number.
                let ref_type = RequestType::from_msg_type(fields.ref_msg_type);
                let names_request = fields.ref_msg_type.is_empty() || ref_type.is_some();
                let of_replay = fields
                    .ref_seq_num
                    .is_some_and(|s| state.replayed_requests.contains(s));
                match direction {
                    Direction::Response if names_request && !of_replay => Action::Reject {
                        ref_seq: fields.ref_seq_num,
                        ref_id: fields.business_reject_ref_id,
                        ref_type,
                    },
                    _ => Action::Other,
                }
            }
            _ => Action::Other,
        }
    }

    /// The capture lost bytes of one direction of the binding's connection: the jump in
    /// MsgSeqNum after it is no sequence gap, and a hole in the responses may have held the
    /// first response of any request waiting (the correlator measures none of them).
    pub fn capture_hole(&mut self, b: Binding, direction: Direction, correlator: &mut Correlator) {
        if direction == Direction::Response {
            correlator.capture_hole_in_responses(self.scope(b));
        }
        if let Some(state) = self.state_mut(b.session) {
            state.sequences[side(direction)].capture_hole();
        }
    }

    /// The binding's TCP connection closed (or was forgotten). Its TestRequests still
    /// waiting are unanswered. An anonymous session ends with it (its requests can never be
    /// answered); a named session continues at the next connection with its CompIDs, its
    /// pending requests still answerable.
    pub fn connection_closed(
        &mut self,
        b: Binding,
        correlator: &mut Correlator,
        sessions: &mut SessionTable,
    ) {
        if let Some(Some(state)) = self.states.get_mut((b.session as usize).wrapping_sub(1)) {
            let health = sessions.get_mut(b.session).map(|s| &mut s.health);
            end_test_requests(state, |c| c == b.connection, &mut self.counters, health);
        }
        if b.anonymous {
            correlator.close_session(self.scope(b));
            if let Some(slot) = self.states.get_mut((b.session as usize).wrapping_sub(1)) {
                *slot = None;
            }
        } else if let Some(s) = sessions.get_mut(b.session) {
            s.health.logged_out();
        }
    }
}

/// The identity of the session a connection's first message names (`None`: no CompIDs,
/// an anonymous session).
pub fn identity(
    facts: &MessageFacts,
    message: &[u8],
    direction: Direction,
) -> Option<SessionIdentity> {
    let (client, server) = match direction {
        Direction::Request => (facts.sender_comp_id, facts.target_comp_id),
        Direction::Response => (facts.target_comp_id, facts.sender_comp_id),
    };
    (!client.is_empty() && !server.is_empty()).then(|| {
        (
            fixscope_fix::begin_string(message).into(),
            client.into(),
            server.into(),
        )
    })
}

fn oldest_test_request(state: &SessionState) -> Option<u64> {
    state
        .test_requests
        .iter()
        .filter_map(|q| q.front().map(|t| t.sent_ns))
        .min()
}

/// The TestRequests of the connections that `ended` picks can no longer be answered: each
/// is counted `test_requests_unanswered` once and never paired later.
fn end_test_requests(
    state: &mut SessionState,
    ended: impl Fn(u32) -> bool,
    counters: &mut SessionCounters,
    health: Option<&mut SessionHealth>,
) {
    let mut n = 0;
    for q in &mut state.test_requests {
        let before = q.len();
        q.retain(|t| !ended(t.connection));
        n += (before - q.len()) as u64;
    }
    if n == 0 {
        return;
    }
    counters.test_requests_unanswered += n;
    if let Some(h) = health {
        h.counters.test_requests_unanswered += n;
        h.oldest_unanswered_test_request_ns = oldest_test_request(state);
    }
}
