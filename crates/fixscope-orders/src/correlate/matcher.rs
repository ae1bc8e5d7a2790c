//! The correlator: the matching rules applied to the pending table, and what it counts.

use super::early::EarlyResponses;
pub use super::early::Replay;
use super::pending::{PendingTable, SEEN_AFTER_ITS_RESPONSE};
use super::record::{Answered, Outcome, RecordBook};
use super::rules::classify_response;
use super::scope::{epoch_of, scope_of, session_of};
use fixscope_fix::facts::MessageFacts;
use fixscope_fix::key::KeySpec;
use fixscope_model::order::Latency;
use fixscope_model::order::{RequestType, Stage};

/// Correlation limits (`-m`, `-t`).
#[derive(Clone, Copy, Debug)]
pub struct CorrelatorLimits {
    /// Requests tracked at once; the oldest is evicted (counted) beyond it. This bounds
    /// memory; age alone never ends tracking.
    pub max_pending: usize,
    /// The alert threshold: a request with no response this long after it is counted
    /// `timed_out` (and `late` if the response still comes).
    pub ttl_ns: u64,
}

impl Default for CorrelatorLimits {
    fn default() -> Self {
        CorrelatorLimits {
            max_pending: 1 << 20,
            ttl_ns: 500_000_000,
        }
    }
}

pub use fixscope_model::counters::correlation::CorrelationCounters;

/// What every latency of one order carries, read from its pending entry.
#[derive(Clone, Copy)]
struct OrderFacts {
    request_type: RequestType,
    session: u64,
    late: bool,
    request_ts_ns: u64,
    request_seq: u32,
    groups: fixscope_model::order::Groups,
}

impl OrderFacts {
    fn of(p: &super::pending::Pending, session: u64) -> Self {
        OrderFacts {
            request_type: p.request_type,
            session,
            late: p.timed_out,
            request_ts_ns: p.request_ts_ns,
            request_seq: p.request_seq,
            groups: p.groups,
        }
    }

    fn latency(&self, stage: Stage, ns: u64) -> Latency {
        Latency {
            stage,
            request_type: self.request_type,
            session: self.session,
            ns,
            late: self.late,
            request_ts_ns: self.request_ts_ns,
            request_seq: self.request_seq,
            groups: self.groups,
        }
    }
}

/// A request about to be tracked: what its pending entry is made of.
#[derive(Clone, Copy)]
struct NewRequest<'k> {
    session: u64,
    key: &'k [u8],
    hash: u64,
    ts_ns: u64,
    last_byte_seq: u32,
    request_type: RequestType,
    msg_seq: u32,
}

/// The pending-request table and the matching rules.
pub struct Correlator {
    key: KeySpec,
    limits: CorrelatorLimits,
    table: PendingTable,
    key_buf: Vec<u8>,
    /// Hashes of (session, key) of requests that stopped being tracked, direct-mapped:
    /// a PossResend (97=Y) of an order already answered and done is recognised by its
    /// ClOrdID. One store per release; an entry overwritten by a later key only makes a very
    /// old resend count as the order it claims to be.
    released: Box<[u64]>,
    /// The `--by` ids of the request being recorded ([`Correlator::on_request_grouped`]).
    groups: fixscope_model::order::Groups,
    /// Responses that found no request, waiting the reorder window for one.
    early: EarlyResponses,
    /// The held responses a request claimed (reused).
    replays: Vec<Replay>,
    /// Per session scope, the latest hole in its responses: the time of the first response
    /// after it ([`OPEN_HOLE`] until one came). A request stamped before it may have been
    /// answered inside the hole, so nothing it has not recorded yet is measured. Empty on
    /// a capture without holes: the only cost then is one `is_empty` per response.
    response_holes: std::collections::HashMap<u64, u64>,
    /// One row per request (`--records`), when asked ([`Correlator::keep_records`]).
    records: Option<Box<RecordBook>>,
    pub counters: CorrelationCounters,
    /// A request carried a firm (115) and was tracked under it: a report without one
    /// (128) may still be its answer.
    firm_keys: bool,
}

/// A hole in a session's responses with no response after it yet: every request tracked
/// so far may have been answered inside it.
const OPEN_HOLE: u64 = u64::MAX;

/// Whether a request of `session` stamped `request_ts_ns` may have been answered inside a
/// hole of the session's responses (so no stage it has not recorded yet is measured).
#[inline(always)]
fn answered_in_hole(
    holes: &std::collections::HashMap<u64, u64>,
    session: u64,
    request_ts_ns: u64,
) -> bool {
    !holes.is_empty() && holes.get(&session).is_some_and(|&b| request_ts_ns < b)
}

/// Epochs before the current one where an order may still rest (a reset a day: a week).
const EPOCH_LOOKBACK: u64 = 8;

/// Entries of [`Correlator`]'s recently released keys (a power of two).
const RELEASED_MEMORY: usize = 1 << 16;

impl Correlator {
    pub fn new(key: KeySpec, limits: CorrelatorLimits) -> Self {
        Correlator {
            key,
            limits,
            table: PendingTable::new(),
            key_buf: Vec::new(),
            released: vec![0; RELEASED_MEMORY].into_boxed_slice(),
            groups: fixscope_model::order::NO_GROUPS,
            early: EarlyResponses::default(),
            replays: Vec::new(),
            response_holes: std::collections::HashMap::new(),
            records: None,
            counters: CorrelationCounters::default(),
            firm_keys: false,
        }
    }

    pub fn key_spec(&self) -> &KeySpec {
        &self.key
    }

    /// Requests tracked now (answered working orders included).
    pub fn pending(&self) -> usize {
        self.table.len()
    }

    /// Tracked requests still waiting for their first response.
    pub fn unanswered_pending(&self) -> usize {
        self.table.unanswered()
    }

    /// Records a request seen at `ts_ns` (the time of the segment carrying its last byte).
    /// Responses of its order that the capture showed first, stamped after it, answer it
    /// now: each latency they make goes to `on_replayed` with the response it came from.
    pub fn on_request<F>(
        &mut self,
        session: u64,
        request_type: RequestType,
        facts: &MessageFacts,
        ts_ns: u64,
        on_replayed: F,
    ) where
        F: FnMut(Latency, &[u8], &Replay),
    {
        self.on_request_at(session, request_type, facts, ts_ns, 0, on_replayed)
    }

    /// [`Correlator::on_request_at`] with the order's `--by` value ids.
    #[allow(clippy::too_many_arguments)]
    pub fn on_request_grouped<F>(
        &mut self,
        session: u64,
        request_type: RequestType,
        facts: &MessageFacts,
        ts_ns: u64,
        last_byte_seq: u32,
        groups: fixscope_model::order::Groups,
        on_replayed: F,
    ) where
        F: FnMut(Latency, &[u8], &Replay),
    {
        self.groups = groups;
        self.on_request_at(
            session,
            request_type,
            facts,
            ts_ns,
            last_byte_seq,
            on_replayed,
        );
        self.groups = fixscope_model::order::NO_GROUPS;
    }

    /// [`Correlator::on_request`] with the TCP sequence number of the request's last byte.
    pub fn on_request_at<F>(
        &mut self,
        session: u64,
        request_type: RequestType,
        facts: &MessageFacts,
        ts_ns: u64,
        last_byte_seq: u32,
        on_replayed: F,
    ) where
        F: FnMut(Latency, &[u8], &Replay),
    {
        self.counters.requests += 1;
        self.firm_keys |= !facts.firm.is_empty();
        let mut key_buf = std::mem::take(&mut self.key_buf);
        if let Some(key) = facts.key(&self.key, &mut key_buf) {
            let request = NewRequest {
                session,
                key,
                hash: self.table.hash(session, key),
                ts_ns,
                last_byte_seq,
                request_type,
                msg_seq: facts.msg_seq_num,
            };
            self.request_of_key(&request, on_replayed);
        } else {
            self.request_without_key(session, request_type, ts_ns, facts.msg_seq_num);
        }
        self.key_buf = key_buf;
    }

    /// A request with its key (counted in `requests` already): tracked, unless its key is
    /// already pending or responses of its order came first.
    #[inline(always)]
    fn request_of_key<F>(&mut self, request: &NewRequest<'_>, on_replayed: F)
    where
        F: FnMut(Latency, &[u8], &Replay),
    {
        let (session, key) = (request.session, request.key);
        if self.table.find(session, key, request.hash).is_some() {
            self.counters.duplicate_requests += 1;
            self.counters.untracked_requests += 1;
            self.record_untracked(request, Outcome::Untracked);
        } else {
            // A ClOrdID reused in a later epoch is a new order: the older one goes first.
            if epoch_of(session) > 0 {
                self.supersede_older(session, key);
            }
            if self.early.is_empty() || !self.answered_before(request, on_replayed) {
                self.track(request);
            }
        }
    }

    /// A request without its key (counted in `requests` already): never tracked.
    #[cold]
    fn request_without_key(&mut self, session: u64, t: RequestType, ts_ns: u64, msg_seq: u32) {
        self.counters.missing_key += 1;
        self.counters.untracked_requests += 1;
        if let Some(book) = self.records.as_deref_mut() {
            let row = book.row(session, &[], t, Some(ts_ns), msg_seq);
            book.done_now(row, Outcome::Untracked);
        }
    }

    /// A request done at once (`--records`): never tracked, or over before it was seen.
    #[cold]
    fn record_untracked(&mut self, r: &NewRequest<'_>, outcome: Outcome) {
        if let Some(book) = self.records.as_deref_mut() {
            let ts = (outcome != Outcome::ResponseBeforeRequest).then_some(r.ts_ns);
            let row = book.row(r.session, r.key, r.request_type, ts, r.msg_seq);
            book.done_now(row, outcome);
        }
    }

    /// Starts tracking a request; returns its slot.
    #[inline(always)]
    fn track(&mut self, r: &NewRequest<'_>) -> u32 {
        self.make_room();
        let slot = self.table.insert(
            r.session,
            r.key,
            r.hash,
            r.ts_ns,
            r.last_byte_seq,
            r.request_type,
        );
        let p = self.table.get_mut(slot);
        p.msg_seq = r.msg_seq;
        p.groups = self.groups;
        if let Some(book) = self.records.as_deref_mut() {
            let row = book.row(r.session, r.key, r.request_type, Some(r.ts_ns), r.msg_seq);
            book.open(slot, row);
        }
        slot
    }

    /// A request some of whose responses came first (held in `early`). When each is
    /// stamped at or after the request, the capture only read them out of the wire's
    /// order: the request is tracked and they answer it now, in time order, with their
    /// latencies. When one is stamped before it, the order is counted
    /// `response_before_request` and tracked, without a latency, until a terminal
    /// response, so its later responses are not unmatched. False when none came.
    #[cold]
    fn answered_before<F>(&mut self, request: &NewRequest<'_>, mut on_replayed: F) -> bool
    where
        F: FnMut(Latency, &[u8], &Replay),
    {
        let NewRequest {
            session, key, hash, ..
        } = *request;
        let mut replays = std::mem::take(&mut self.replays);
        let claimed = self.early.claim(hash, session, key, &mut replays);
        if claimed.responses == 0 {
            self.replays = replays;
            return false;
        }
        if replays.iter().all(|r| r.ts_ns >= request.ts_ns) {
            replays.sort_by_key(|r| r.ts_ns);
            let tracked = self.track(request);
            // Answered only now, from a response stamped past -t: the order did time out
            // on the wire, as the sweep would have said had it been read in order.
            if replays[0].ts_ns - request.ts_ns > self.limits.ttl_ns {
                self.table.get_mut(tracked).timed_out = true;
                self.counters.timed_out += 1;
                if let Some(book) = self.records.as_deref_mut() {
                    book.timed_out(tracked);
                }
            }
            let mut slot = Some(tracked);
            for r in &replays {
                match slot {
                    Some(s) => {
                        let released =
                            self.answer(s, session, key, r.ts_ns, r.kind, &mut |l, k| {
                                on_replayed(l, k, r)
                            });
                        if released {
                            slot = None;
                        }
                    }
                    // After the order's terminal response: as any response with no
                    // request tracked.
                    None => self.counters.unmatched_responses += 1,
                }
            }
            self.replays = replays;
            return true;
        }
        self.replays = replays;
        self.counters.response_before_request += 1;
        if claimed.terminal {
            // Over before it was seen: remembered for PossResend checks, not tracked.
            self.remember_released(hash);
            self.record_untracked(request, Outcome::ResponseBeforeRequest);
            return true;
        }
        self.make_room();
        let slot = self.table.insert(
            session,
            key,
            hash,
            SEEN_AFTER_ITS_RESPONSE,
            request.last_byte_seq,
            request.request_type,
        );
        self.table.answer(slot);
        self.table.get_mut(slot).groups = self.groups;
        if let Some(book) = self.records.as_deref_mut() {
            let mut row = book.row(session, key, request.request_type, None, request.msg_seq);
            row.outcome = Outcome::ResponseBeforeRequest;
            book.open(slot, row);
        }
        true
    }

    /// Matches a response seen at `ts_ns` (the time of the segment carrying its first byte)
    /// and reports the latencies it completes, each with the order's key (tag values joined
    /// by SOH) for the slowest-orders lists.
    #[inline]
    pub fn on_response<F>(
        &mut self,
        session: u64,
        facts: &MessageFacts,
        ts_ns: u64,
        mut on_latency: F,
    ) where
        F: FnMut(Latency, &[u8]),
    {
        self.response_seen(session, ts_ns);
        let mut key_buf = std::mem::take(&mut self.key_buf);
        let Some(key) = facts.key(&self.key, &mut key_buf) else {
            self.counters.missing_key += 1;
            self.key_buf = key_buf;
            return;
        };
        let hash = self.table.hash(session, key);
        let kind = classify_response(
            facts.msg_type,
            facts.exec_type,
            facts.ord_status,
            facts.exec_trans_type,
        );
        let found = self.find_answered(session, key, hash);
        // A venue that does not echo the firm (128) answers the firm's order all the same:
        // the one order of that ClOrdID under any firm, never one of several (no guess).
        let found = match found {
            None if self.firm_keys && facts.firm.is_empty() => {
                self.table.find_with_any_firm(session, key).ok().flatten()
            }
            found => found,
        };
        if kind.unsolicited {
            self.unsolicited_report(found, kind);
            self.key_buf = key_buf;
            return;
        }
        let Some(slot) = found else {
            self.hold_early(session, key, hash, ts_ns, kind, facts);
            self.key_buf = key_buf;
            return;
        };
        self.answer(slot, session, key, ts_ns, kind, &mut on_latency);
        self.key_buf = key_buf;
        if kind.ends_original {
            self.end_original(session, facts, slot);
        }
    }

    /// A response seen: counted; orders a hole in the session's responses may hide, told.
    #[inline(always)]
    fn response_seen(&mut self, session: u64, ts_ns: u64) {
        self.counters.responses += 1;
        if !self.response_holes.is_empty() {
            self.response_after_hole(session, ts_ns);
        }
    }

    /// The order a response of `key` answers: in its epoch, else the newest older one's.
    #[inline(always)]
    fn find_answered(&self, session: u64, key: &[u8], hash: u64) -> Option<u32> {
        match self.table.find(session, key, hash) {
            None if epoch_of(session) > 0 => self.find_in_older_epochs(session, key),
            found => found,
        }
    }

    /// A report that answers no request ([`super::rules::ResponseKind::unsolicited`]):
    /// counted apart; it records no latency and leaves a waiting order waiting. A terminal
    /// status still ends the tracking of an order already answered (a bust to a cancel).
    #[cold]
    fn unsolicited_report(&mut self, slot: Option<u32>, kind: super::rules::ResponseKind) {
        self.counters.unsolicited_reports += 1;
        if let Some(slot) = slot {
            if kind.terminal && self.table.get(slot).responded {
                self.release(slot);
            }
        }
    }

    /// The order of `key` tracked in an epoch before `scope`'s, newest first: an order that
    /// rests at the venue across a reset is answered after it (its fills are its own).
    #[cold]
    fn find_in_older_epochs(&self, scope: u64, key: &[u8]) -> Option<u32> {
        let (session, epoch) = (session_of(scope), epoch_of(scope));
        (epoch.saturating_sub(EPOCH_LOOKBACK)..epoch)
            .rev()
            .find_map(|e| {
                let older = scope_of(session, e);
                self.table.any_of_session(older)?;
                self.table.find(older, key, self.table.hash(older, key))
            })
    }

    /// A request reusing a ClOrdID in a later epoch (a new trading day, a reset) is a new
    /// order: the older one of that key is no longer tracked (counted as a connection's
    /// close counts it).
    #[cold]
    fn supersede_older(&mut self, scope: u64, key: &[u8]) {
        if let Some(slot) = self.find_in_older_epochs(scope, key) {
            self.stop_tracking_closed(slot);
        }
    }

    /// Stops tracking `slot` as its session's end would: a working order is
    /// `expired_after_response`, an order never answered `unanswered_closed`.
    fn stop_tracking_closed(&mut self, slot: u32) {
        if self.table.get(slot).responded {
            self.counters.expired_after_response += 1;
        } else {
            self.counters.unanswered_closed += 1;
        }
        if let Some(book) = self.records.as_deref_mut() {
            book.close(slot, Outcome::Closed);
        }
        self.release(slot);
    }

    /// A new epoch of the session of `scope` began (a reset): the older epoch's requests
    /// still waiting for a first response stop waiting (`unanswered_closed`); its working
    /// orders, answered, rest at the venue and keep their later fills.
    pub fn close_unanswered(&mut self, scope: u64) {
        for slot in self.table.unanswered_of_session(scope) {
            self.stop_tracking_closed(slot);
        }
    }

    /// A response with no tracked request: its request may still come (a capture that
    /// reordered), so it is held, not yet unmatched.
    #[cold]
    fn hold_early(
        &mut self,
        session: u64,
        key: &[u8],
        hash: u64,
        ts_ns: u64,
        mut kind: super::rules::ResponseKind,
        facts: &MessageFacts,
    ) {
        kind.multileg = facts.multileg_report();
        let replay = Replay {
            ts_ns,
            kind,
            msg_type: facts.msg_type.first().copied().unwrap_or(b'8'),
            exec_type: facts.exec_type,
            ord_status: facts.ord_status,
        };
        let unclaimed = self.early.hold(hash, session, key, replay);
        self.count_unclaimed(unclaimed);
    }

    /// A response of kind `kind` seen at `ts_ns` answers the tracked request in `slot`:
    /// the latencies it completes go to `on_latency`; true when it ended the order (the
    /// slot is released).
    #[inline(always)]
    fn answer<F>(
        &mut self,
        slot: u32,
        session: u64,
        key: &[u8],
        ts_ns: u64,
        kind: super::rules::ResponseKind,
        on_latency: &mut F,
    ) -> bool
    where
        F: FnMut(Latency, &[u8]),
    {
        let first = self.table.answer(slot);
        let counters = &mut self.counters;
        let p = self.table.get_mut(slot);
        let late = p.timed_out;
        let after_hole = answered_in_hole(&self.response_holes, session, p.request_ts_ns);
        let reversed_now = first && p.answered_before_it_was_seen(ts_ns);
        counters.response_before_request += u64::from(reversed_now);
        let reversed = p.seen_after_its_response();
        let order = OrderFacts::of(p, session);
        let mut book = self.records.as_deref_mut();
        if let Some(book) = book.as_deref_mut() {
            let a = Answered {
                first,
                late,
                rejected: kind.reject,
                after_hole,
                reversed,
            };
            book.answered(slot, a);
        }
        let mut emit = |stage, from: u64| match ts_ns.checked_sub(from) {
            // An order seen answered before its request has no latency to trust, nor one
            // whose responses may have been lost in a capture hole (a later response's
            // time would be measured as its first, its ack or its fill).
            _ if reversed || after_hole => {}
            Some(ns) => {
                if let Some(book) = book.as_deref_mut() {
                    book.latency(slot, stage, ns);
                }
                on_latency(order.latency(stage, ns), key)
            }
            None => counters.time_reversed += 1,
        };
        if first {
            emit(Stage::FirstResponse, p.request_ts_ns);
        }
        if kind.ack && !p.acked {
            p.acked = true;
            p.ack_ts_ns = ts_ns;
            emit(Stage::Ack, p.request_ts_ns);
        }
        if kind.fill && !p.filled {
            p.filled = true;
            emit(Stage::Fill, p.request_ts_ns);
            if p.acked {
                emit(Stage::AckToFill, p.ack_ts_ns);
            }
        }
        if reversed_now {
            // Counted in response_before_request.
        } else if first && after_hole {
            counters.answered_after_capture_hole += 1;
        } else if first {
            counters.matched += 1;
            counters.late += u64::from(late);
        }
        if kind.terminal {
            self.release(slot);
        }
        kind.terminal
    }

    /// A cancel or replace confirmed (or a terminal status) ends the order it names in
    /// OrigClOrdID: stop tracking it, so cancelled resting orders do not fill the table.
    /// An original that never had a response of its own stays (its answer may still come).
    fn end_original(&mut self, session: u64, facts: &MessageFacts, answered_slot: u32) {
        if facts.orig_cl_ord_id.is_empty() || !self.key.is_cl_ord_id() {
            return;
        }
        // The original is the same firm's (a hub's report names it in 128).
        let mut buf = std::mem::take(&mut self.key_buf);
        let orig = facts.key_of(facts.orig_cl_ord_id, &mut buf);
        let hash = self.table.hash(session, orig);
        let found = self.table.find(session, orig, hash);
        self.key_buf = buf;
        if let Some(slot) = found {
            if slot != answered_slot && self.table.get(slot).responded {
                self.release(slot);
            }
        }
    }

    /// Stops tracking a request, remembering its key for PossResend checks.
    fn release(&mut self, slot: u32) {
        self.remember_released(self.table.get(slot).hash_of());
        self.table.release(slot);
        if let Some(book) = self.records.as_deref_mut() {
            book.close(slot, Outcome::Unanswered);
        }
    }

    fn remember_released(&mut self, hash: u64) {
        self.released[hash as usize & (RELEASED_MEMORY - 1)] = hash;
    }

    /// Evicts the oldest tracked request when `-m` are tracked, before one more.
    #[inline]
    fn make_room(&mut self) {
        if self.table.len() >= self.limits.max_pending {
            self.evict_oldest();
        }
    }

    /// Whether the request `facts` names is tracked on `session` or was recently (a
    /// PossResend (97=Y) of it is a replay, not a new order).
    pub fn knows_request(&mut self, session: u64, facts: &MessageFacts) -> bool {
        let mut key_buf = std::mem::take(&mut self.key_buf);
        let known = facts.key(&self.key, &mut key_buf).is_some_and(|key| {
            let hash = self.table.hash(session, key);
            self.table.find(session, key, hash).is_some()
                || self.released[hash as usize & (RELEASED_MEMORY - 1)] == hash
        });
        self.key_buf = key_buf;
        known
    }

    /// A session Reject (35=3) naming a request by RefSeqNum (45) answers it (each order of
    /// a list or a cross, one message): the reject is its first response and
    /// acknowledgement, and the order is over. The latencies go
    /// to `on_latency` like a response's; false when no tracked request has that MsgSeqNum.
    pub fn answer_by_msg_seq<F>(
        &mut self,
        session: u64,
        ref_seq: u32,
        ts_ns: u64,
        mut on_latency: F,
    ) -> bool
    where
        F: FnMut(Latency, &[u8]),
    {
        if !self.response_holes.is_empty() {
            self.response_after_hole(session, ts_ns);
        }
        // A list or a cross is one message: its reject rejects each of its orders.
        let mut answered = false;
        while let Some(slot) = self.table.find_by_msg_seq(session, ref_seq) {
            self.answer_with_reject(slot, session, ts_ns, &mut on_latency);
            answered = true;
        }
        answered
    }

    /// A BusinessMessageReject (35=j) naming a request by its key (BusinessRejectRefID
    /// 379) and type (RefMsgType 372) answers it, as [`Correlator::answer_by_msg_seq`]; a
    /// tracked request of another type under that key is not the one rejected.
    pub fn answer_by_key<F>(
        &mut self,
        session: u64,
        key: &[u8],
        request_type: RequestType,
        ts_ns: u64,
        on_latency: F,
    ) -> bool
    where
        F: FnMut(Latency, &[u8]),
    {
        if !self.response_holes.is_empty() {
            self.response_after_hole(session, ts_ns);
        }
        let hash = self.table.hash(session, key);
        match self.table.find(session, key, hash) {
            Some(slot) if self.table.get(slot).request_type == request_type => {
                self.answer_with_reject(slot, session, ts_ns, on_latency);
                true
            }
            _ => false,
        }
    }

    fn answer_with_reject<F>(&mut self, slot: u32, session: u64, ts_ns: u64, mut on_latency: F)
    where
        F: FnMut(Latency, &[u8]),
    {
        let first = self.table.answer(slot);
        let p = self.table.get_mut(slot);
        let late = p.timed_out;
        let after_hole = answered_in_hole(&self.response_holes, session, p.request_ts_ns);
        let reversed_now = first && p.answered_before_it_was_seen(ts_ns);
        self.counters.response_before_request += u64::from(reversed_now);
        let mut stages = [None, None];
        if first {
            stages[0] = Some(Stage::FirstResponse);
        }
        if !p.acked {
            p.acked = true;
            p.ack_ts_ns = ts_ns;
            stages[1] = Some(Stage::Ack);
        }
        let order = OrderFacts::of(p, session);
        let key = p.key_bytes().to_vec();
        let reversed = p.seen_after_its_response();
        if reversed || after_hole {
            stages = [None, None];
        }
        if let Some(book) = self.records.as_deref_mut() {
            let a = Answered {
                first,
                late,
                rejected: true,
                after_hole,
                reversed,
            };
            book.answered(slot, a);
        }
        for stage in stages.into_iter().flatten() {
            match ts_ns.checked_sub(order.request_ts_ns) {
                Some(ns) => {
                    if let Some(book) = self.records.as_deref_mut() {
                        book.latency(slot, stage, ns);
                    }
                    on_latency(order.latency(stage, ns), &key)
                }
                None => self.counters.time_reversed += 1,
            }
        }
        if reversed_now {
            // Counted in response_before_request.
        } else if first && after_hole {
            self.counters.answered_after_capture_hole += 1;
        } else if first {
            self.counters.matched += 1;
            self.counters.late += u64::from(late);
        }
        self.release(slot);
    }

    /// Reports requests that reached `-t` without a response at time `now_ns` (each once;
    /// they stay tracked, so a late response still records its true latency).
    pub fn expire(&mut self, now_ns: u64) {
        let cutoff = now_ns.saturating_sub(self.limits.ttl_ns);
        while let Some(slot) = self.table.next_unanswered_before(cutoff) {
            let p = self.table.get_mut(slot);
            p.timed_out = true;
            if !answered_in_hole(&self.response_holes, p.session, p.request_ts_ns) {
                self.counters.timed_out += 1;
                if let Some(book) = self.records.as_deref_mut() {
                    book.timed_out(slot);
                }
            }
        }
        let unclaimed = self.early.expire(now_ns);
        self.count_unclaimed(unclaimed);
    }

    /// The end of the input: no request can come for the responses still waiting, each is
    /// unmatched. (Called once every stream was flushed.)
    pub fn end_of_input(&mut self) {
        let unclaimed = self.early.drain();
        self.count_unclaimed(unclaimed);
    }

    /// Held responses no request claimed: an answer is unmatched (an alarm); the venue's
    /// own expiry of an order no longer tracked is an unsolicited report.
    #[inline]
    fn count_unclaimed(&mut self, u: super::early::Unclaimed) {
        self.counters.unmatched_responses += u.unmatched;
        self.counters.unsolicited_reports += u.unsolicited;
    }

    /// Keeps one row per request from now on (`--records`): taken with
    /// [`Correlator::records_mut`] and [`RecordBook::take_done`].
    pub fn keep_records(&mut self) {
        self.records.get_or_insert_with(Box::default);
    }

    /// Whether order records are kept.
    pub fn keeps_records(&self) -> bool {
        self.records.is_some()
    }

    /// The order records, when kept.
    pub fn records_mut(&mut self) -> Option<&mut RecordBook> {
        self.records.as_deref_mut()
    }

    /// The end of the run: the rows of every order still tracked are done (unanswered
    /// ones as `unanswered`; answered working orders with their outcome).
    pub fn close_records(&mut self) {
        if self.records.is_none() {
            return;
        }
        let slots: Vec<u32> = self.table.live_slots().collect();
        if let Some(book) = self.records.as_deref_mut() {
            for slot in slots {
                book.close(slot, Outcome::Unanswered);
            }
        }
    }

    /// The capture lost part of `session`'s responses (a TCP hole given up): every request
    /// of it tracked so far may have been answered inside the hole.
    pub fn capture_hole_in_responses(&mut self, session: u64) {
        self.response_holes.insert(session, OPEN_HOLE);
    }

    /// A response of `session` at `ts_ns`: an open hole of the session is closed at it
    /// (requests stamped from now on were not answered inside it).
    #[cold]
    fn response_after_hole(&mut self, session: u64, ts_ns: u64) {
        if let Some(bound) = self.response_holes.get_mut(&session) {
            if *bound == OPEN_HOLE {
                *bound = ts_ns;
            }
        }
    }

    /// The connection of `session` closed: no response can come for its requests.
    pub fn close_session(&mut self, session: u64) {
        self.response_holes.remove(&session);
        while let Some(slot) = self.table.any_of_session(session) {
            self.stop_tracking_closed(slot);
        }
    }

    fn evict_oldest(&mut self) {
        if let Some(slot) = self.table.oldest() {
            self.counters.evicted += 1;
            if self.table.get(slot).responded {
                self.counters.expired_after_response += 1;
            } else {
                self.counters.unanswered_evicted += 1;
            }
            self.table.release(slot);
            if let Some(book) = self.records.as_deref_mut() {
                book.close(slot, Outcome::Evicted);
            }
        }
    }

    #[cfg(test)]
    fn footprint(&self) -> (usize, usize, usize) {
        self.table.footprint()
    }
}

mod neutral;

#[cfg(test)]
mod tests;
