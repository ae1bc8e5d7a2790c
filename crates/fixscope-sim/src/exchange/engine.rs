//! The exchange's order handling: requests in, ExecutionReports / OrderCancelRejects out,
//! delays through a timer queue, ground truth stamped when responses hit the socket.
//!
//! What a request says (`request`), an ExecutionReport's fields (`exec_report`), the truth
//! records (`truth_records`) and the timer entries (`timer`) are sibling modules below it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

use super::exec_report::Er;
use super::orders::{
    OrderBook, Slot, FORCED_BUSINESS, FORCED_CANCEL, FORCED_NONE, FORCED_ORDER, FORCED_SESSION,
};
use super::request::{new_order_reject, read_request};
use super::tags::{
    BUSINESS_REJECT_REASON, BUSINESS_REJECT_REF_ID, CXL_REJ_REASON, CXL_REJ_RESPONSE_TO, ORDER_ID,
    REF_MSG_TYPE, TEXT,
};
use super::timer::{Timer, TIMER_ACK, TIMER_FILL, TIMER_TEST_REQUEST};
use super::truth_records::{complete, Sinks};
use super::ExchangeSummary;
use crate::delay::DelaySpec;
use crate::outbuf::OutBuf;
use crate::rng::Rng;
use crate::sending_time::UtcClock;
use crate::session::{Inbound, Session, State, Tx};
use crate::stall::{self, StallSpec};
use crate::truth::TruthWriter;
use crate::uint_field::parse_uint;

/// Price used when an order has none (market orders still need a LastPx).
const DEFAULT_PRICE: &[u8] = b"100";

/// SessionRejectReason (373) codes a forced session Reject cycles through (seeded):
/// invalid tag number, required tag missing, value incorrect, incorrect data format.
const SESSION_REJECT_REASONS: [u64; 4] = [0, 1, 5, 6];
/// BusinessRejectReason (380) codes: other, unknown ID, application not available,
/// conditionally required field missing.
const BUSINESS_REJECT_REASONS: [u64; 4] = [0, 1, 4, 5];
/// ClOrdIDs remembered to recognise a PossResend (97=Y) of an order already taken.
const RECENT_CLORDIDS: usize = 1 << 16;

/// A session's CompIDs as the client sends them (SenderCompID, TargetCompID).
pub type SessionKey = (Vec<u8>, Vec<u8>);
const STAGE_ACK: u64 = 0;
const STAGE_FILL: u64 = 1;

pub struct Cfg {
    pub ack_delay: DelaySpec,
    pub fill_delay: DelaySpec,
    pub partial_fills: u32,
    pub no_fill: bool,
    pub max_live: usize,
    /// `--stall`: which requests are held, and for how long.
    pub stalls: Vec<StallSpec>,
    pub symbol_ack_delay: Vec<(String, DelaySpec)>,
    /// `--order-reject-every`, `--cancel-reject-every`, `--business-reject-every`,
    /// `--session-reject-every` (0: never).
    pub order_reject_every: u64,
    pub cancel_reject_every: u64,
    pub business_reject_every: u64,
    pub session_reject_every: u64,
    pub test_request_delay: u64,
    pub replay_store: usize,
    pub resend_last: u64,
    pub comp_id: String,
    /// `--session-truth` given: count what each session writes.
    pub session_truth: bool,
}

/// One connection's FIX state.
pub struct ConnState {
    pub peer: String,
    pub session: Session,
    pub out: OutBuf,
    pub book: OrderBook,
    /// Application requests (D/F/G) received on this connection: `--stall` picks by it.
    pub requests: u64,
    /// Close once the output is flushed (Logout exchanged or protocol error).
    pub closing: bool,
    /// The client's SenderCompID once logged on (per-request truth).
    pub client_comp_id: Vec<u8>,
}

/// State shared by all connections of one exchange.
pub struct Ctx {
    pub enc: FixEncoder,
    pub clock: UtcClock,
    pub rng: Rng,
    pub timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    pub cfg: Cfg,
    pub stats: ExchangeSummary,
    pub truth: Option<TruthWriter>,
    /// CLOCK_MONOTONIC just before the read() whose bytes are being handled (the truth's
    /// `read_call_ns`).
    pub read_call_ns: u64,
    next_order_id: u64,
    next_exec_id: u64,
    /// Sessions whose connection closed, by CompIDs: a reconnect continues them.
    pub parked: HashMap<SessionKey, Session>,
    /// Requests seen (all sessions): `--*-reject-every` counts them.
    requests_total: u64,
    reject_rng: Rng,
    /// Hashes of (session, epoch, ClOrdID) of recent requests, to ignore PossResends.
    recent: hashbrown::HashSet<u64>,
    recent_order: VecDeque<u64>,
    hasher: FixedState,
    pub order_truth: Option<std::io::BufWriter<std::fs::File>>,
}

/// One tagged message handed to write(): its tag (slot and stage), CLOCK_MONOTONIC just
/// before the write() (`ts`) and when the write() returned (`done`).
pub struct Written {
    pub tag: u64,
    pub ts: u64,
    pub done: u64,
}

fn stamp_tag(idx: u32, stage: u64) -> u64 {
    (idx as u64) << 1 | stage
}

impl ConnState {
    pub fn new(peer: String, session: Session, order_capacity: usize) -> Self {
        ConnState {
            peer,
            session,
            out: OutBuf::with_capacity(64 * 1024, 1024),
            book: OrderBook::with_capacity(order_capacity),
            requests: 0,
            closing: false,
            client_comp_id: Vec::new(),
        }
    }
}

impl Ctx {
    pub fn new(cfg: Cfg, seed: u64, truth: Option<TruthWriter>, stats: ExchangeSummary) -> Self {
        Ctx {
            enc: FixEncoder::new(),
            clock: UtcClock::new(),
            rng: Rng::new(seed),
            timers: BinaryHeap::with_capacity(64 * 1024),
            timer_seq: 0,
            cfg,
            stats,
            truth,
            read_call_ns: 0,
            next_order_id: 1,
            next_exec_id: 1,
            parked: HashMap::new(),
            requests_total: 0,
            reject_rng: Rng::new(seed ^ 0x5e55_10e5_12e1_ec75),
            recent: hashbrown::HashSet::new(),
            recent_order: VecDeque::new(),
            hasher: FixedState::with_seed(0x5eed),
            order_truth: None,
        }
    }

    /// A new connection's session, configured by the flags.
    pub fn new_session(&self) -> Session {
        let mut s = Session::acceptor(&self.cfg.comp_id);
        s.store = crate::replay_store::ReplayStore::new(self.cfg.replay_store);
        s.test_request_delay_ns = self.cfg.test_request_delay;
        s.wire.enabled = self.cfg.session_truth;
        s
    }

    /// A Logon on a new connection: a session known by its CompIDs continues (numbering,
    /// store, truth counters); with `--resend-last` its store "lost" the last messages.
    fn restore_session(&mut self, st: &mut ConnState, msg: &[u8]) {
        let (mut sender, mut target, mut reset, mut is_logon) = (&b""[..], &b""[..], false, false);
        for (t, v) in Fields::new(msg) {
            match t {
                tag::MSG_TYPE => is_logon = v == b"A",
                tag::SENDER_COMP_ID => sender = v,
                tag::TARGET_COMP_ID => target = v,
                141 => reset = v == b"Y",
                _ => {}
            }
        }
        if !is_logon {
            return;
        }
        if let Some(mut parked) = self.parked.remove(&(sender.to_vec(), target.to_vec())) {
            parked.reopen();
            if !reset {
                parked.forget_inbound(self.cfg.resend_last);
            }
            st.session = parked;
        }
    }

    /// The connection closed: its named session waits for a reconnect.
    pub fn park(&mut self, st: &mut ConnState) {
        let s = &st.session;
        if s.target_comp_id().is_empty() {
            return;
        }
        let key = (s.target_comp_id().to_vec(), s.sender_comp_id().to_vec());
        let fresh = self.new_session();
        self.parked
            .insert(key, std::mem::replace(&mut st.session, fresh));
    }

    fn arm_session_timer(&mut self, conn: (u32, u32), due: u64) {
        self.timer_seq += 1;
        self.timers.push(Reverse(Timer {
            due,
            seq: self.timer_seq,
            conn: conn.0,
            conn_gen: conn.1,
            slot: 0,
            slot_gen: 0,
            token: 0,
            kind: TIMER_TEST_REQUEST,
        }));
    }

    /// True when `key` (a request's session, epoch and ClOrdID) was seen recently;
    /// remembers it.
    fn seen_recently(&mut self, key: u64) -> bool {
        if self.recent.contains(&key) {
            return true;
        }
        if self.recent_order.len() == RECENT_CLORDIDS {
            if let Some(old) = self.recent_order.pop_front() {
                self.recent.remove(&old);
            }
        }
        self.recent_order.push_back(key);
        self.recent.insert(key);
        false
    }

    /// Handles one framed inbound message that arrived at `now` (CLOCK_MONOTONIC right after
    /// the read() that returned its last byte).
    pub fn on_message(&mut self, conn: (u32, u32), st: &mut ConnState, msg: &[u8], now: u64) {
        self.stats.messages_in += 1;
        if st.session.state() == State::AwaitingLogon && !self.parked.is_empty() {
            self.restore_session(st, msg);
        }
        let tx = Tx {
            enc: &mut self.enc,
            clock: &mut self.clock,
            out: st.out.buf(),
        };
        match st.session.on_message(msg, now, tx) {
            Inbound::App(t) => self.on_app(conn, st, msg, t, now),
            Inbound::Handled => {}
            Inbound::Resend { begin, end } => {
                st.session
                    .resend(&mut self.enc, &mut self.clock, &mut st.out, now, begin, end);
            }
            Inbound::TestRequestDue(due) => self.arm_session_timer(conn, due),
            Inbound::LoggedOn => {
                self.stats.logons += 1;
                st.client_comp_id.clear();
                st.client_comp_id
                    .extend_from_slice(st.session.target_comp_id());
            }
            Inbound::LoggedOut => {
                self.stats.logouts += 1;
                st.closing = true;
            }
            Inbound::Disconnect(_) => {
                self.stats.protocol_errors += 1;
                st.closing = true;
            }
        }
    }

    fn on_app(&mut self, conn: (u32, u32), st: &mut ConnState, msg: &[u8], t: &[u8], now: u64) {
        let msg_type = match t {
            b"D" => b'D',
            b"F" => b'F',
            b"G" => b'G',
            _ => {
                let seq = Fields::new(msg)
                    .find(|&(tg, _)| tg == tag::MSG_SEQ_NUM)
                    .and_then(|(_, v)| parse_uint(v))
                    .unwrap_or(0);
                let tx = Tx {
                    enc: &mut self.enc,
                    clock: &mut self.clock,
                    out: st.out.buf(),
                };
                // 373=11: invalid MsgType.
                st.session.reject(tx, now, seq, 11, "unsupported MsgType");
                return;
            }
        };
        if self.stats.first_request_ns == 0 {
            self.stats.first_request_ns = now;
        }
        self.stats.last_request_ns = now;
        st.requests += 1;
        let hold = stall::hold_ns(&self.cfg.stalls, st.requests);
        let idx = st.book.alloc();
        let epoch = st.session.epoch();
        let s = st.book.get_mut(idx);
        s.msg_type = msg_type;
        s.request_ns = now;
        s.epoch = epoch;
        s.read_call_ns = self.read_call_ns;
        let poss_resend = read_request(s, msg);
        // A PossResend of a request already taken is not taken again (FIX: the receiver
        // checks the ClOrdID); any other is the request it is.
        let key = self
            .hasher
            .hash_one((&st.client_comp_id[..], epoch, &s.clordid[..]));
        if self.seen_recently(key) && poss_resend {
            self.stats.poss_resends_ignored += 1;
            st.book.release(idx);
            return;
        }
        let s = st.book.get_mut(idx);
        self.requests_total += 1;
        let every = |n: u64, k: u64| n > 0 && k.is_multiple_of(n);
        let k = self.requests_total;
        s.forced = if every(self.cfg.session_reject_every, k) {
            FORCED_SESSION
        } else if every(self.cfg.business_reject_every, k) {
            FORCED_BUSINESS
        } else if msg_type == b'D' && every(self.cfg.order_reject_every, k) {
            FORCED_ORDER
        } else if msg_type != b'D' && every(self.cfg.cancel_reject_every, k) {
            FORCED_CANCEL
        } else {
            FORCED_NONE
        };
        match msg_type {
            b'D' => {
                self.stats.orders += 1;
                s.reject = new_order_reject(s);
                if s.price.is_empty() {
                    s.price.extend_from_slice(DEFAULT_PRICE);
                }
            }
            b'F' => self.stats.cancels += 1,
            _ => self.stats.replaces += 1,
        }
        if s.clordid.is_empty() {
            s.clordid.extend_from_slice(b"NONE");
        }
        // Sampled for every request, held or not, so `--stall` leaves the others' delays as
        // they are for a given --seed. A held request waits in the timer queue like any
        // other: the requests behind it are answered on time.
        let mut delay = self.cfg.ack_delay.sample(&mut self.rng);
        let symbol = &st.book.get(idx).symbol;
        if let Some((_, spec)) = self
            .cfg
            .symbol_ack_delay
            .iter()
            .find(|(sym, _)| sym.as_bytes() == &symbol[..])
        {
            delay = spec.sample(&mut self.rng);
        }
        if hold > 0 {
            self.stats.held += 1;
            delay = delay.saturating_add(hold);
        }
        if delay == 0 {
            self.respond(st, idx, now);
        } else {
            self.arm(conn, st.book.get_mut(idx), idx, now + delay, TIMER_ACK);
        }
    }

    fn arm(&mut self, conn: (u32, u32), s: &mut Slot, idx: u32, due: u64, kind: u8) {
        s.timer_armed = true;
        s.timer_token = s.timer_token.wrapping_add(1);
        self.timer_seq += 1;
        self.timers.push(Reverse(Timer {
            due,
            seq: self.timer_seq,
            conn: conn.0,
            conn_gen: conn.1,
            slot: idx,
            slot_gen: s.gen,
            token: s.timer_token,
            kind,
        }));
    }

    /// A timer of this connection is due (the caller checked the connection generation).
    pub fn on_timer(&mut self, t: Timer, st: &mut ConnState, now: u64) {
        if t.kind == TIMER_TEST_REQUEST {
            let tx = Tx {
                enc: &mut self.enc,
                clock: &mut self.clock,
                out: st.out.buf(),
            };
            st.session.answer_test_requests(tx, now);
            return;
        }
        let s = st.book.get_mut(t.slot);
        if !s.in_use || s.gen != t.slot_gen || s.timer_token != t.token || !s.timer_armed {
            return;
        }
        s.timer_armed = false;
        if t.kind == TIMER_ACK {
            self.respond(st, t.slot, now);
        } else if self.fill(st, t.slot, now) {
            self.fill_chain(st, t.slot, now);
        }
        self.try_complete(st, t.slot);
    }

    /// The processing delay of request `idx` is over: answer it.
    fn respond(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        let s = st.book.get(idx);
        match (s.forced, s.msg_type) {
            (FORCED_SESSION, _) => self.session_reject(st, idx, now),
            (FORCED_BUSINESS, _) => self.business_reject(st, idx, now),
            (FORCED_CANCEL, t) => {
                let to: &[u8] = if t == b'F' { b"1" } else { b"2" };
                self.cancel_reject(st, idx, now, to, "rejected (--cancel-reject-every)");
            }
            (_, b'D') => self.respond_new(st, idx, now),
            (_, b'F') => self.respond_cancel(st, idx, now),
            _ => self.respond_replace(st, idx, now),
        }
        self.try_complete(st, idx);
    }

    /// Request `idx` was answered by the reject just encoded: its record is complete.
    fn answered_by_reject(&mut self, st: &mut ConnState, idx: u32, answer: &'static str) {
        self.stats.messages_out += 1;
        let s = st.book.get_mut(idx);
        s.answer = answer;
        s.finalize = true;
        self.stamp(st, idx, STAGE_ACK);
    }

    /// Session Reject (35=3) of request `idx` by its MsgSeqNum (45), reason 373.
    fn session_reject(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        let reason = SESSION_REJECT_REASONS[self.reject_rng.below(4) as usize];
        let seq = st.book.get(idx).msg_seq;
        let tx = Tx {
            enc: &mut self.enc,
            clock: &mut self.clock,
            out: st.out.buf(),
        };
        st.session
            .reject(tx, now, seq, reason, "rejected (--session-reject-every)");
        self.stats.session_rejects += 1;
        self.answered_by_reject(st, idx, "session_reject");
    }

    /// BusinessMessageReject (35=j) of request `idx`: 45, 372, 379 = its ClOrdID, 380.
    fn business_reject(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        let reason = BUSINESS_REJECT_REASONS[self.reject_rng.below(4) as usize];
        let s = st.book.get(idx);
        let enc = st.session.header(&mut self.enc, &mut self.clock, b"j");
        enc.field_uint(45, s.msg_seq)
            .field(REF_MSG_TYPE, &[s.msg_type])
            .field(BUSINESS_REJECT_REF_ID, &s.clordid)
            .field_uint(BUSINESS_REJECT_REASON, reason)
            .field_str(TEXT, "rejected (--business-reject-every)");
        st.session.finish(&mut self.enc, st.out.buf(), now);
        self.stats.business_rejects += 1;
        self.answered_by_reject(st, idx, "business_reject");
    }

    fn respond_new(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        let mut reject = st.book.get(idx).reject;
        if reject.is_none() && st.book.live_count() >= self.cfg.max_live {
            reject = Some("order book full");
        }
        if reject.is_none() && !st.book.insert_live(idx) {
            reject = Some("duplicate ClOrdID");
        }
        if reject.is_none() {
            st.book.get_mut(idx).order_id = self.next_order_id;
            self.next_order_id += 1;
        }
        let s = st.book.get(idx);
        let code: &[u8] = if reject.is_some() { b"8" } else { b"0" };
        let er = Er {
            clordid: &s.clordid,
            orig: b"",
            order_id: s.order_id,
            exec_type: code,
            ord_status: code,
            symbol: &s.symbol,
            side: s.side,
            qty: s.qty,
            cum: 0,
            price: &s.price,
            last_qty: 0,
            text: reject.unwrap_or(""),
        };
        self.exec_report(&mut st.session, &mut st.out, &er, now, reject.is_some());
        self.stamp(st, idx, STAGE_ACK);
        st.book.get_mut(idx).answer = if reject.is_some() {
            "order_reject"
        } else {
            "ack"
        };
        if reject.is_some() {
            self.stats.rejects += 1;
            st.book.get_mut(idx).finalize = true;
        } else {
            self.stats.acks += 1;
            if self.cfg.no_fill {
                st.book.get_mut(idx).finalize = true;
            } else {
                self.fill_chain(st, idx, now);
            }
        }
    }

    fn respond_cancel(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        let target = st.book.find_live(&st.book.get(idx).orig_clordid);
        let Some(o) = target else {
            self.cancel_reject(st, idx, now, b"1", "unknown order");
            return;
        };
        st.book.remove_live(o);
        let (req, ord) = st.book.pair_mut(idx, o);
        let er = Er {
            clordid: &req.clordid,
            orig: &req.orig_clordid,
            order_id: ord.order_id,
            exec_type: b"4",
            ord_status: b"4",
            symbol: &ord.symbol,
            side: ord.side,
            qty: ord.qty,
            cum: ord.cum_qty,
            price: &ord.price,
            last_qty: 0,
            text: "",
        };
        let leaves_override = Some(0);
        self.exec_report_with(
            &mut st.session,
            &mut st.out,
            &er,
            now,
            false,
            leaves_override,
        );
        // The cancelled order's pending fill (if any) is void; its record is complete.
        ord.timer_armed = false;
        ord.next_fill_delay = 0;
        ord.finalize = true;
        req.finalize = true;
        req.answer = "cancelled";
        self.stats.cancelled += 1;
        self.stamp(st, idx, STAGE_ACK);
        self.try_complete(st, o);
    }

    fn respond_replace(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        let req = st.book.get(idx);
        let Some(o) = st.book.find_live(&req.orig_clordid) else {
            self.cancel_reject(st, idx, now, b"2", "unknown order");
            return;
        };
        if st.book.find_live(&req.clordid).is_some() {
            self.cancel_reject(st, idx, now, b"2", "duplicate ClOrdID");
            return;
        }
        let ord = st.book.get(o);
        let new_qty = if req.qty == 0 { ord.qty } else { req.qty };
        if new_qty <= ord.cum_qty {
            self.cancel_reject(st, idx, now, b"2", "quantity not above filled");
            return;
        }
        st.book.remove_live(o);
        let (req, ord) = st.book.pair_mut(idx, o);
        // The request takes over the order (same OrderID, fills so far), with the new
        // quantity and price.
        req.qty = new_qty;
        req.symbol.clone_from(&ord.symbol);
        req.side = ord.side;
        if req.price.is_empty() {
            req.price.clone_from(&ord.price);
        }
        req.order_id = ord.order_id;
        req.cum_qty = ord.cum_qty;
        req.fills_done = ord.fills_done;
        ord.timer_armed = false;
        ord.next_fill_delay = 0;
        ord.finalize = true;
        st.book.insert_live(idx);
        let (req, _) = st.book.pair_mut(idx, o);
        let fix42 = st.session.is_fix42();
        let status: &[u8] = if fix42 {
            b"5"
        } else if req.cum_qty > 0 {
            b"1"
        } else {
            b"0"
        };
        let er = Er {
            clordid: &req.clordid,
            orig: &req.orig_clordid,
            order_id: req.order_id,
            exec_type: b"5",
            ord_status: status,
            symbol: &req.symbol,
            side: req.side,
            qty: req.qty,
            cum: req.cum_qty,
            price: &req.price,
            last_qty: 0,
            text: "",
        };
        self.exec_report(&mut st.session, &mut st.out, &er, now, false);
        st.book.get_mut(idx).answer = "replaced";
        self.stats.replaced += 1;
        self.stamp(st, idx, STAGE_ACK);
        self.try_complete(st, o);
        if self.cfg.no_fill {
            st.book.get_mut(idx).finalize = true;
        } else {
            self.fill_chain(st, idx, now);
        }
    }

    /// OrderCancelReject (35=9) for F (`to` = 1) or G (`to` = 2).
    fn cancel_reject(&mut self, st: &mut ConnState, idx: u32, now: u64, to: &[u8], text: &str) {
        let s = st.book.get(idx);
        let enc = st.session.header(&mut self.enc, &mut self.clock, b"9");
        enc.field(ORDER_ID, b"NONE")
            .field(tag::CL_ORD_ID, &s.clordid)
            .field(tag::ORIG_CL_ORD_ID, &s.orig_clordid)
            .field(tag::ORD_STATUS, b"8")
            .field(CXL_REJ_RESPONSE_TO, to)
            .field(CXL_REJ_REASON, b"1")
            .field_str(TEXT, text);
        st.session.finish(&mut self.enc, st.out.buf(), now);
        self.stats.messages_out += 1;
        self.stats.cancel_rejects += 1;
        st.book.get_mut(idx).finalize = true;
        st.book.get_mut(idx).answer = "cancel_reject";
        self.stamp(st, idx, STAGE_ACK);
    }

    /// Schedules the next fill of `idx`, filling right away while the sampled delay is 0.
    /// A non-zero delay is armed when the response just encoded has been written (see
    /// [`Ctx::on_sent`]), so it separates the two writes.
    fn fill_chain(&mut self, st: &mut ConnState, idx: u32, now: u64) {
        // Bounded: every round fills at least one unit or stops.
        for _ in 0..=self.cfg.partial_fills {
            let delay = self.cfg.fill_delay.sample(&mut self.rng);
            if delay > 0 {
                st.book.get_mut(idx).next_fill_delay = delay;
                return;
            }
            if !self.fill(st, idx, now) {
                return;
            }
        }
    }

    /// Sends one (partial or final) fill of resting order `idx`; true if more remain.
    fn fill(&mut self, st: &mut ConnState, idx: u32, now: u64) -> bool {
        let partials = self.cfg.partial_fills;
        let s = st.book.get_mut(idx);
        let leaves = s.qty.saturating_sub(s.cum_qty);
        if !s.live || leaves == 0 {
            return false;
        }
        let last = if s.fills_done < partials {
            (s.qty / (partials as u64 + 1)).max(1).min(leaves)
        } else {
            leaves
        };
        s.cum_qty += last;
        s.fills_done += 1;
        let full = s.cum_qty >= s.qty;
        let fix42 = st.session.is_fix42();
        let exec_type: &[u8] = match (fix42, full) {
            (true, true) => b"2",
            (true, false) => b"1",
            (false, _) => b"F",
        };
        let s = st.book.get(idx);
        let er = Er {
            clordid: &s.clordid,
            orig: &s.orig_clordid,
            order_id: s.order_id,
            exec_type,
            ord_status: if full { b"2" } else { b"1" },
            symbol: &s.symbol,
            side: s.side,
            qty: s.qty,
            cum: s.cum_qty,
            price: &s.price,
            last_qty: last,
            text: "",
        };
        self.exec_report(&mut st.session, &mut st.out, &er, now, false);
        self.stats.fills += 1;
        self.stamp(st, idx, STAGE_FILL);
        // The first fill completes the truth record.
        st.book.get_mut(idx).finalize = true;
        if full {
            self.stats.filled_orders += 1;
            st.book.remove_live(idx);
        }
        !full
    }

    fn exec_report(
        &mut self,
        sess: &mut Session,
        out: &mut OutBuf,
        er: &Er<'_>,
        now: u64,
        rej: bool,
    ) {
        self.exec_report_with(sess, out, er, now, rej, None)
    }

    fn exec_report_with(
        &mut self,
        sess: &mut Session,
        out: &mut OutBuf,
        er: &Er<'_>,
        now: u64,
        rejected: bool,
        leaves_override: Option<u64>,
    ) {
        let fix42 = sess.is_fix42();
        let exec_id = self.next_exec_id;
        self.next_exec_id += 1;
        let leaves = leaves_override.unwrap_or(if rejected {
            0
        } else {
            er.qty.saturating_sub(er.cum)
        });
        let enc = sess.header(&mut self.enc, &mut self.clock, b"8");
        er.encode_body(enc, fix42, exec_id, leaves, rejected, self.clock.cached());
        sess.finish(&mut self.enc, out.buf(), now);
        self.stats.messages_out += 1;
    }

    /// Tags the message just encoded so its slot learns when it was written.
    fn stamp(&mut self, st: &mut ConnState, idx: u32, stage: u64) {
        st.out.stamp(stamp_tag(idx, stage));
        st.book.get_mut(idx).pending_stamps += 1;
    }

    /// A tagged message was written (see [`Written`]).
    pub fn on_sent(
        &mut self,
        conn: (u32, u32),
        book: &mut OrderBook,
        peer: &str,
        client: &[u8],
        written: Written,
    ) {
        let Written { tag, ts, done } = written;
        let idx = (tag >> 1) as u32;
        let s = book.get_mut(idx);
        s.pending_stamps = s.pending_stamps.saturating_sub(1);
        let slot = if tag & 1 == STAGE_ACK {
            &mut s.ack_ns
        } else {
            &mut s.fill_ns
        };
        if slot.is_none() {
            *slot = Some(ts);
            if tag & 1 == STAGE_ACK {
                s.ack_written_ns = Some(done);
            }
        }
        if s.pending_stamps == 0 && s.next_fill_delay > 0 {
            let delay = std::mem::take(&mut s.next_fill_delay);
            if s.live {
                self.arm(conn, s, idx, ts + delay, TIMER_FILL);
            }
        }
        let sinks = Sinks {
            truth: &mut self.truth,
            order_truth: &mut self.order_truth,
            stats: &mut self.stats,
        };
        complete(book, sinks, peer, client, idx);
    }

    fn try_complete(&mut self, st: &mut ConnState, idx: u32) {
        let sinks = Sinks {
            truth: &mut self.truth,
            order_truth: &mut self.order_truth,
            stats: &mut self.stats,
        };
        complete(&mut st.book, sinks, &st.peer, &st.client_comp_id, idx);
    }

    /// The connection is going away: write the records not yet written.
    pub fn close(&mut self, st: &mut ConnState) {
        let idxs: Vec<u32> = st.book.in_use().collect();
        for idx in idxs {
            let s = st.book.get_mut(idx);
            s.finalize = true;
            s.pending_stamps = 0;
            s.next_fill_delay = 0;
            let sinks = Sinks {
                truth: &mut self.truth,
                order_truth: &mut self.order_truth,
                stats: &mut self.stats,
            };
            complete(&mut st.book, sinks, &st.peer, &st.client_comp_id, idx);
        }
    }
}
