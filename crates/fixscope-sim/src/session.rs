//! The FIX session layer shared by the exchange (acceptor) and the client (initiator):
//! Logon/Logout, Heartbeat/TestRequest, MsgSeqNum checking, ResendRequest answered with
//! SequenceReset-GapFill.
//!
//! Gap policy (deliberately lenient, the simulator must not lose orders): a MsgSeqNum above
//! the expected one triggers a ResendRequest, but the message is still processed and the
//! expected number moves past it; the resent/gap-filled messages that follow (PossDup=Y)
//! are then ignored. A number below the expected one without PossDup is fatal.

use std::collections::VecDeque;

use fixscope_core::fix::encode::FixEncoder;
use fixscope_core::fix::message::Fields;

use crate::outbuf::OutBuf;
use crate::replay_store::ReplayStore;
use crate::sending_time::UtcClock;
/// Re-exported: `session::parse_uint` was its public home before it moved below the
/// session layer (the replay store and the wire truth parse sequence numbers too).
pub use crate::uint_field::parse_uint;
use crate::wire_truth::WireTruth;

pub mod tags {
    pub const BEGIN_SEQ_NO: u32 = 7;
    pub const END_SEQ_NO: u32 = 16;
    pub const NEW_SEQ_NO: u32 = 36;
    pub const POSS_DUP_FLAG: u32 = 43;
    pub const SENDING_TIME: u32 = 52;
    pub const TEXT: u32 = 58;
    pub const ENCRYPT_METHOD: u32 = 98;
    pub const HEART_BT_INT: u32 = 108;
    pub const TEST_REQ_ID: u32 = 112;
    pub const ORIG_SENDING_TIME: u32 = 122;
    pub const GAP_FILL_FLAG: u32 = 123;
    pub const RESET_SEQ_NUM_FLAG: u32 = 141;
    pub const REF_SEQ_NUM: u32 = 45;
    pub const POSS_RESEND: u32 = 97;
    pub const SESSION_REJECT_REASON: u32 = 373;
    pub const DEFAULT_APPL_VER_ID: u32 = 1137;
}

use fixscope_core::fix::tag::{
    BEGIN_STRING, MSG_SEQ_NUM, MSG_TYPE, SENDER_COMP_ID, TARGET_COMP_ID,
};
use tags::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Acceptor,
    Initiator,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    AwaitingLogon,
    Active,
    LogoutSent,
    Closed,
}

/// What the caller must do with an inbound message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inbound<'a> {
    /// An application message of this MsgType, to be processed by the caller.
    App(&'a [u8]),
    /// Session-level message, fully handled (any reply was appended to `out`).
    Handled,
    /// The Logon handshake completed.
    LoggedOn,
    /// The peer logged out (our Logout reply, if needed, is in `out`): close after flushing.
    LoggedOut,
    /// Protocol violation (a Logout may have been appended): close after flushing.
    Disconnect(&'static str),
    /// A ResendRequest for `[begin, end]` (0: to the last sent) with the replay store on:
    /// the caller answers it with [`Session::resend`] (it knows how to stamp replays).
    Resend { begin: u64, end: u64 },
    /// A TestRequest to be answered at `due` (`--test-request-delay`): the caller arms a
    /// timer and then calls [`Session::answer_test_requests`].
    TestRequestDue(u64),
}

/// Whether a periodic check wants the connection dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    Ok,
    Disconnect(&'static str),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    pub gaps_detected: u64,
    pub resend_requests_sent: u64,
    pub resend_requests_received: u64,
    pub gap_fills_sent: u64,
    pub sequence_resets_received: u64,
    pub heartbeats_sent: u64,
    pub test_requests_sent: u64,
    pub test_requests_answered: u64,
    pub rejects_received: u64,
    pub rejects_sent: u64,
}

/// Everything an outgoing message needs besides the session: the encoder, the SendingTime
/// source and the buffer to append to.
pub struct Tx<'a> {
    pub enc: &'a mut FixEncoder,
    pub clock: &'a mut UtcClock,
    pub out: &'a mut Vec<u8>,
}

#[derive(Debug)]
pub struct Session {
    role: Role,
    state: State,
    begin_string: Vec<u8>,
    sender: Vec<u8>,
    target: Vec<u8>,
    appl_ver_id: Vec<u8>,
    next_out: u64,
    next_in: u64,
    hb_ns: u64,
    last_recv_ns: u64,
    last_send_ns: u64,
    test_req_sent_ns: Option<u64>,
    pub stats: SessionStats,
    /// What this side wrote, counted as fixscope's counters (`--session-truth`).
    pub wire: WireTruth,
    /// Sent messages kept for resends (`--replay-store`; off: resends are one GapFill).
    pub store: ReplayStore,
    /// Epochs begun by hard resets (Logon 141=Y, SequenceReset-Reset) after the first.
    epoch: u64,
    /// Inbound numbers below this were processed (a store that "lost" the last messages
    /// still knows it must not process their resends again).
    processed_below: u64,
    /// The inbound numbers asked for by our last ResendRequest and not resent yet.
    replay_from: u64,
    replay_to: u64,
    /// Answer TestRequests this long after reading them.
    pub test_request_delay_ns: u64,
    /// TestRequests to answer: (due, TestReqID, read at).
    pending_answers: VecDeque<(u64, Vec<u8>, u64)>,
    /// TestReqID of the TestRequests we send (`None`: a unique one each).
    pub test_request_id: Option<Vec<u8>>,
    test_requests_out: u64,
    /// TestRequests we sent that no Heartbeat answered yet.
    pub test_requests_unanswered: u64,
}

/// The session-relevant fields of one message.
#[derive(Default)]
struct Header<'a> {
    begin: &'a [u8],
    msg_type: &'a [u8],
    seq: Option<u64>,
    poss_dup: bool,
    sender: &'a [u8],
    target: &'a [u8],
    begin_seq: u64,
    new_seq: u64,
    gap_fill: bool,
    test_req_id: &'a [u8],
    end_seq: u64,
    heartbeat_secs: Option<u64>,
    reset_seq: bool,
    appl_ver_id: &'a [u8],
}

/// Header tags: parsing of an application message stops at the first tag not in here.
fn is_header_tag(tag: u32) -> bool {
    matches!(
        tag,
        8 | 9
            | 35
            | 49
            | 56
            | 34
            | 43
            | 52
            | 97
            | 122
            | 115
            | 128
            | 50
            | 57
            | 142
            | 143
            | 1128
            | 1129
    )
}

pub fn is_session_msg_type(t: &[u8]) -> bool {
    matches!(t, b"0" | b"1" | b"2" | b"3" | b"4" | b"5" | b"A")
}

fn parse_header(msg: &[u8]) -> Header<'_> {
    let mut h = Header::default();
    let mut app = false;
    for (tag, v) in Fields::new(msg) {
        match tag {
            BEGIN_STRING => h.begin = v,
            MSG_TYPE => {
                h.msg_type = v;
                app = !is_session_msg_type(v);
            }
            MSG_SEQ_NUM => h.seq = parse_uint(v),
            POSS_DUP_FLAG => h.poss_dup = v == b"Y",
            SENDER_COMP_ID => h.sender = v,
            TARGET_COMP_ID => h.target = v,
            t if app && !is_header_tag(t) => break,
            BEGIN_SEQ_NO => h.begin_seq = parse_uint(v).unwrap_or(0),
            END_SEQ_NO => h.end_seq = parse_uint(v).unwrap_or(0),
            NEW_SEQ_NO => h.new_seq = parse_uint(v).unwrap_or(0),
            GAP_FILL_FLAG => h.gap_fill = v == b"Y",
            TEST_REQ_ID => h.test_req_id = v,
            HEART_BT_INT => h.heartbeat_secs = parse_uint(v),
            RESET_SEQ_NUM_FLAG => h.reset_seq = v == b"Y",
            DEFAULT_APPL_VER_ID => h.appl_ver_id = v,
            _ => {}
        }
    }
    h
}

impl Session {
    /// An acceptor learns BeginString, CompIDs and heartbeat interval from the Logon.
    pub fn acceptor(comp_id: &str) -> Self {
        Self::new(Role::Acceptor, b"", comp_id.as_bytes(), b"", 30)
    }

    pub fn initiator(begin_string: &str, sender: &str, target: &str, heartbeat_secs: u32) -> Self {
        Self::new(
            Role::Initiator,
            begin_string.as_bytes(),
            sender.as_bytes(),
            target.as_bytes(),
            heartbeat_secs,
        )
    }

    fn new(role: Role, begin: &[u8], sender: &[u8], target: &[u8], hb_secs: u32) -> Self {
        let appl_ver_id = if begin == b"FIXT.1.1" {
            b"9".to_vec()
        } else {
            Vec::new()
        };
        Session {
            role,
            state: State::AwaitingLogon,
            begin_string: begin.to_vec(),
            sender: sender.to_vec(),
            target: target.to_vec(),
            appl_ver_id,
            next_out: 1,
            next_in: 1,
            hb_ns: hb_secs as u64 * 1_000_000_000,
            last_recv_ns: 0,
            last_send_ns: 0,
            test_req_sent_ns: None,
            stats: SessionStats::default(),
            wire: WireTruth::default(),
            store: ReplayStore::default(),
            epoch: 0,
            processed_below: 0,
            replay_from: 1,
            replay_to: 0,
            test_request_delay_ns: 0,
            pending_answers: VecDeque::new(),
            test_request_id: None,
            test_requests_out: 0,
            test_requests_unanswered: 0,
        }
    }

    /// Hard resets so far (pairs orders within an epoch in the truth).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A restored session (reconnect without reset) waits for its peer's Logon again.
    pub fn reopen(&mut self) {
        self.state = State::AwaitingLogon;
        self.test_req_sent_ns = None;
        self.pending_answers.clear();
        self.test_requests_unanswered = 0;
    }

    /// Acts as an engine whose store lost the last `k` inbound messages: the next message
    /// shows a gap and is answered with a ResendRequest; resends of the lost (but processed)
    /// ones are ignored.
    pub fn forget_inbound(&mut self, k: u64) {
        if k == 0 {
            return;
        }
        self.processed_below = self.processed_below.max(self.next_in);
        self.next_in = self.next_in.saturating_sub(k).max(1);
    }

    /// Numbering restarts (Logon 141=Y): a new epoch when anything was exchanged before.
    fn reset_numbers(&mut self) {
        if self.next_out > 1 || self.next_in > 1 {
            self.epoch += 1;
        }
        self.next_out = 1;
        self.next_in = 1;
        self.processed_below = 0;
        self.replay_from = 1;
        self.replay_to = 0;
        self.store.clear();
        self.wire.reset_epoch(1);
    }

    pub fn state(&self) -> State {
        self.state
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn begin_string(&self) -> &[u8] {
        &self.begin_string
    }
    pub fn sender_comp_id(&self) -> &[u8] {
        &self.sender
    }
    pub fn target_comp_id(&self) -> &[u8] {
        &self.target
    }
    pub fn next_out_seq(&self) -> u64 {
        self.next_out
    }
    pub fn next_in_seq(&self) -> u64 {
        self.next_in
    }
    /// True for FIX.4.2 (whose ExecType codes differ from 4.4's).
    pub fn is_fix42(&self) -> bool {
        self.begin_string == b"FIX.4.2"
    }

    /// Starts an outgoing message with the standard header (35, 49, 56, 34, 52); add body
    /// fields to the returned encoder, then call [`Session::finish`].
    pub fn header<'e>(
        &mut self,
        enc: &'e mut FixEncoder,
        clock: &mut UtcClock,
        msg_type: &[u8],
    ) -> &'e mut FixEncoder {
        let seq = self.next_out;
        self.next_out += 1;
        enc.start(msg_type)
            .field(SENDER_COMP_ID, &self.sender)
            .field(TARGET_COMP_ID, &self.target)
            .field_uint(MSG_SEQ_NUM, seq)
            .field(SENDING_TIME, clock.cached())
    }

    /// Appends the message begun with [`Session::header`] to `out`.
    pub fn finish(&mut self, enc: &mut FixEncoder, out: &mut Vec<u8>, now_ns: u64) -> usize {
        self.finish_stamped(enc, out, now_ns, 0)
    }

    /// [`Session::finish`], keeping `stamp` with the message in the replay store.
    pub fn finish_stamped(
        &mut self,
        enc: &mut FixEncoder,
        out: &mut Vec<u8>,
        now_ns: u64,
        stamp: u64,
    ) -> usize {
        self.last_send_ns = now_ns;
        let n = enc.finish(&self.begin_string, out);
        let msg = &out[out.len() - n..];
        self.wire.written(msg);
        self.store.keep(msg, stamp);
        n
    }

    /// Ends a message begun with [`Session::header`] while disconnected: it takes its
    /// MsgSeqNum and goes to the replay store only (first seen on the wire when resent).
    pub fn finish_queued(&mut self, enc: &mut FixEncoder, scratch: &mut Vec<u8>, stamp: u64) {
        scratch.clear();
        enc.finish(&self.begin_string, scratch);
        self.wire.queued(self.next_out - 1);
        self.store.keep(scratch, stamp);
    }

    /// Ends a message that is not new: counted, never stored (replays, gap fills).
    fn finish_again(&mut self, enc: &mut FixEncoder, out: &mut Vec<u8>, now_ns: u64) {
        self.last_send_ns = now_ns;
        let n = enc.finish(&self.begin_string, out);
        self.wire.written(&out[out.len() - n..]);
    }

    /// Initiator: sends Logon (with ResetSeqNumFlag, and DefaultApplVerID for FIXT.1.1).
    pub fn logon(&mut self, tx: Tx<'_>, now_ns: u64) {
        self.reset_numbers();
        self.logon_with(tx, now_ns, true);
    }

    /// Initiator, reconnecting: Logon without ResetSeqNumFlag, numbering continues (the
    /// acceptor asks for what it misses).
    pub fn logon_continue(&mut self, tx: Tx<'_>, now_ns: u64) {
        self.logon_with(tx, now_ns, false);
    }

    fn logon_with(&mut self, tx: Tx<'_>, now_ns: u64, reset: bool) {
        self.reopen();
        let hb = self.hb_ns / 1_000_000_000;
        let enc = self.header(tx.enc, tx.clock, b"A");
        enc.field(ENCRYPT_METHOD, b"0").field_uint(HEART_BT_INT, hb);
        if reset {
            enc.field(RESET_SEQ_NUM_FLAG, b"Y");
        }
        if !self.appl_ver_id.is_empty() {
            enc.field(DEFAULT_APPL_VER_ID, &self.appl_ver_id);
        }
        self.finish(tx.enc, tx.out, now_ns);
        self.last_recv_ns = now_ns;
    }

    /// SequenceReset-Reset (35=4, 123=N): our numbering jumps to `new_seq`, a new epoch.
    pub fn sequence_reset(&mut self, tx: Tx<'_>, now_ns: u64, new_seq: u64) {
        self.header(tx.enc, tx.clock, b"4")
            .field(GAP_FILL_FLAG, b"N")
            .field_uint(NEW_SEQ_NO, new_seq);
        self.finish_again(tx.enc, tx.out, now_ns);
        self.next_out = new_seq;
        self.epoch += 1;
        self.store.clear();
    }

    /// TestRequest (35=1) with our TestReqID (`test_request_id`, or TR<n>).
    pub fn test_request(&mut self, tx: Tx<'_>, now_ns: u64) {
        self.test_requests_out += 1;
        let n = self.test_requests_out;
        let enc = self.header(tx.enc, tx.clock, b"1");
        match &self.test_request_id {
            Some(id) => enc.field(TEST_REQ_ID, id),
            None => {
                let mut id = *b"TR00000000000000000000";
                let mut v = n;
                for b in id[2..].iter_mut().rev() {
                    *b = b'0' + (v % 10) as u8;
                    v /= 10;
                }
                enc.field(TEST_REQ_ID, &id)
            }
        };
        self.finish(tx.enc, tx.out, now_ns);
        self.test_requests_unanswered += 1;
    }

    /// Sends the Heartbeats of TestRequests due by `now`; returns the next due time.
    pub fn answer_test_requests(&mut self, tx: Tx<'_>, now_ns: u64) -> Option<u64> {
        while let Some(&(due, _, _)) = self.pending_answers.front() {
            if due > now_ns {
                return Some(due);
            }
            let (_, id, read_ns) = self.pending_answers.pop_front().expect("front");
            self.answer_test_request(tx.enc, tx.clock, tx.out, now_ns, &id, read_ns);
        }
        None
    }

    fn answer_test_request(
        &mut self,
        enc: &mut FixEncoder,
        clock: &mut UtcClock,
        out: &mut Vec<u8>,
        now_ns: u64,
        id: &[u8],
        read_ns: u64,
    ) {
        self.header(enc, clock, b"0").field(TEST_REQ_ID, id);
        self.finish(enc, out, now_ns);
        self.stats.test_requests_answered += 1;
        self.wire.answered_test_request(read_ns, now_ns);
    }

    /// Answers a ResendRequest for `[begin, end]` from the replay store: application
    /// messages and Rejects again under their MsgSeqNum with 43=Y and 122, runs of other
    /// administrative messages (and anything no longer stored) as one GapFill each.
    /// Replays carrying a stamp are stamped in `out` (the client learns when a request
    /// queued while disconnected first went out).
    pub fn resend(
        &mut self,
        enc: &mut FixEncoder,
        clock: &mut UtcClock,
        out: &mut OutBuf,
        now_ns: u64,
        begin: u64,
        end: u64,
    ) {
        let last = self.next_out.saturating_sub(1);
        let end = if end == 0 || end > last { last } else { end };
        if begin == 0 || begin > end {
            return;
        }
        let stored: Vec<_> = self
            .store
            .range(begin, end)
            .filter(|m| !m.gap_filled())
            .cloned()
            .collect();
        let mut next = begin;
        for m in stored {
            if m.seq > next {
                self.gap_fill_range(enc, clock, out.buf(), now_ns, next, m.seq);
            }
            enc.start(&m.msg_type)
                .field(SENDER_COMP_ID, &self.sender)
                .field(TARGET_COMP_ID, &self.target)
                .field_uint(MSG_SEQ_NUM, m.seq)
                .field(POSS_DUP_FLAG, b"Y")
                .field(SENDING_TIME, clock.now())
                .field(ORIG_SENDING_TIME, &m.sending_time);
            for (t, v) in m.body_fields() {
                enc.field(t, v);
            }
            self.finish_again(enc, out.buf(), now_ns);
            if m.stamp != 0 {
                out.stamp(m.stamp);
            }
            next = m.seq + 1;
        }
        if next <= end {
            self.gap_fill_range(enc, clock, out.buf(), now_ns, next, end + 1);
        }
    }

    /// SequenceReset-GapFill at `seq` covering up to `new_seq` (exclusive).
    fn gap_fill_range(
        &mut self,
        enc: &mut FixEncoder,
        clock: &mut UtcClock,
        out: &mut Vec<u8>,
        now_ns: u64,
        seq: u64,
        new_seq: u64,
    ) {
        let now = clock.now();
        enc.start(b"4")
            .field(SENDER_COMP_ID, &self.sender)
            .field(TARGET_COMP_ID, &self.target)
            .field_uint(MSG_SEQ_NUM, seq)
            .field(POSS_DUP_FLAG, b"Y")
            .field(SENDING_TIME, now)
            .field(ORIG_SENDING_TIME, now)
            .field(GAP_FILL_FLAG, b"Y")
            .field_uint(NEW_SEQ_NO, new_seq);
        self.finish_again(enc, out, now_ns);
        self.stats.gap_fills_sent += 1;
    }

    /// Sends Logout; the session waits for the peer's Logout before closing.
    pub fn logout(&mut self, tx: Tx<'_>, now_ns: u64, text: &str) {
        let enc = self.header(tx.enc, tx.clock, b"5");
        if !text.is_empty() {
            enc.field_str(TEXT, text);
        }
        self.finish(tx.enc, tx.out, now_ns);
        self.state = State::LogoutSent;
    }

    /// Session-level Reject (35=3) of message `ref_seq` with SessionRejectReason `reason`.
    pub fn reject(&mut self, tx: Tx<'_>, now_ns: u64, ref_seq: u64, reason: u64, text: &str) {
        self.header(tx.enc, tx.clock, b"3")
            .field_uint(REF_SEQ_NUM, ref_seq)
            .field_uint(SESSION_REJECT_REASON, reason)
            .field_str(TEXT, text);
        self.finish(tx.enc, tx.out, now_ns);
        self.stats.rejects_sent += 1;
    }

    /// Handles one framed inbound message.
    pub fn on_message<'m>(&mut self, msg: &'m [u8], now_ns: u64, tx: Tx<'_>) -> Inbound<'m> {
        let h = parse_header(msg);
        self.last_recv_ns = now_ns;
        self.test_req_sent_ns = None;
        let Some(seq) = h.seq else {
            return self.fail(tx, now_ns, "missing or bad MsgSeqNum (34)");
        };
        let msg_type = h.msg_type;
        if self.state == State::Closed {
            return Inbound::Disconnect("message after Logout");
        }
        if self.state == State::AwaitingLogon {
            if msg_type != b"A" {
                // Spec: a first message that is not a Logon gets a disconnect, no Logout.
                return Inbound::Disconnect("first message was not Logon");
            }
            return self.on_logon(&h, seq, now_ns, tx);
        }
        // SequenceReset-Reset ignores MsgSeqNum entirely.
        if msg_type == b"4" && !h.gap_fill {
            self.stats.sequence_resets_received += 1;
            if h.new_seq > self.next_in {
                self.next_in = h.new_seq;
            }
            self.epoch += 1;
            self.processed_below = 0;
            self.replay_to = 0;
            return Inbound::Handled;
        }
        if seq < self.next_in {
            if !(h.poss_dup || msg_type == b"4") {
                return self.fail(tx, now_ns, "MsgSeqNum too low");
            }
            // A resend: processed when it is one we asked for and never processed (its
            // original never reached us); otherwise we already have it.
            if seq < self.replay_from || seq > self.replay_to {
                return Inbound::Handled;
            }
            self.replay_from = if msg_type == b"4" {
                h.new_seq.max(seq + 1)
            } else {
                seq + 1
            };
            if msg_type == b"4" || seq < self.processed_below || is_session_msg_type(msg_type) {
                return Inbound::Handled;
            }
            return Inbound::App(msg_type);
        }
        if seq > self.next_in {
            self.stats.gaps_detected += 1;
            // A Logout or ResendRequest is answered regardless; everything else too (see
            // the module docs), after asking for the missing range.
            self.send_resend_request(tx.enc, tx.clock, tx.out, now_ns, self.next_in, seq - 1);
        }
        self.next_in = seq + 1;
        match msg_type {
            b"0" => {
                if !h.test_req_id.is_empty() {
                    self.test_requests_unanswered = self.test_requests_unanswered.saturating_sub(1);
                }
                Inbound::Handled
            }
            b"1" => {
                if self.test_request_delay_ns == 0 {
                    let id = h.test_req_id;
                    self.answer_test_request(tx.enc, tx.clock, tx.out, now_ns, id, now_ns);
                    return Inbound::Handled;
                }
                let due = now_ns + self.test_request_delay_ns;
                self.pending_answers
                    .push_back((due, h.test_req_id.to_vec(), now_ns));
                Inbound::TestRequestDue(due)
            }
            b"2" => {
                self.stats.resend_requests_received += 1;
                let begin = h.begin_seq.max(1);
                if self.store.is_enabled() {
                    return Inbound::Resend {
                        begin,
                        end: h.end_seq,
                    };
                }
                self.gap_fill(tx, now_ns, begin);
                Inbound::Handled
            }
            b"3" => {
                self.stats.rejects_received += 1;
                if self.role == Role::Initiator {
                    // It may answer one of our requests (RefSeqNum 45).
                    return Inbound::App(msg_type);
                }
                Inbound::Handled
            }
            b"4" => {
                self.stats.sequence_resets_received += 1;
                if h.new_seq > self.next_in {
                    self.next_in = h.new_seq;
                }
                Inbound::Handled
            }
            b"5" => {
                if self.state != State::LogoutSent {
                    self.header(tx.enc, tx.clock, b"5");
                    self.finish(tx.enc, tx.out, now_ns);
                }
                self.state = State::Closed;
                Inbound::LoggedOut
            }
            b"A" => self.fail(tx, now_ns, "unexpected Logon"),
            t => Inbound::App(t),
        }
    }

    fn on_logon(&mut self, h: &Header<'_>, seq: u64, now_ns: u64, tx: Tx<'_>) -> Inbound<'static> {
        if self.role == Role::Acceptor {
            if !h.begin.starts_with(b"FIX") {
                return Inbound::Disconnect("bad BeginString");
            }
            self.begin_string.clear();
            self.begin_string.extend_from_slice(h.begin);
            // Our SenderCompID is whatever they addressed; theirs becomes our target.
            if !h.target.is_empty() {
                self.sender.clear();
                self.sender.extend_from_slice(h.target);
            }
            self.target.clear();
            self.target.extend_from_slice(h.sender);
            self.hb_ns = h.heartbeat_secs.unwrap_or(30) * 1_000_000_000;
            self.appl_ver_id.clear();
            if h.begin == b"FIXT.1.1" {
                let v: &[u8] = if h.appl_ver_id.is_empty() {
                    b"9"
                } else {
                    h.appl_ver_id
                };
                self.appl_ver_id.extend_from_slice(v);
            }
            if h.reset_seq {
                self.reset_numbers();
            }
        }
        if seq < self.next_in {
            return self.fail(tx, now_ns, "MsgSeqNum too low");
        }
        let gap = (seq > self.next_in).then_some((self.next_in, seq - 1));
        self.next_in = seq + 1;
        self.state = State::Active;
        if self.role == Role::Acceptor {
            let hb = self.hb_ns / 1_000_000_000;
            let enc = self.header(tx.enc, tx.clock, b"A");
            enc.field(ENCRYPT_METHOD, b"0").field_uint(HEART_BT_INT, hb);
            if h.reset_seq {
                enc.field(RESET_SEQ_NUM_FLAG, b"Y");
            }
            if !self.appl_ver_id.is_empty() {
                enc.field(DEFAULT_APPL_VER_ID, &self.appl_ver_id);
            }
            self.finish(tx.enc, tx.out, now_ns);
        }
        if let Some((from, to)) = gap {
            self.stats.gaps_detected += 1;
            self.send_resend_request(tx.enc, tx.clock, tx.out, now_ns, from, to);
        }
        Inbound::LoggedOn
    }

    fn send_resend_request(
        &mut self,
        enc: &mut FixEncoder,
        clock: &mut UtcClock,
        out: &mut Vec<u8>,
        now_ns: u64,
        from: u64,
        to: u64,
    ) {
        // The range really missing (not EndSeqNo 0, "everything after"): the message
        // that showed the gap is here.
        self.header(enc, clock, b"2")
            .field_uint(BEGIN_SEQ_NO, from)
            .field_uint(END_SEQ_NO, to);
        self.finish(enc, out, now_ns);
        self.replay_from = from;
        self.replay_to = to;
        self.stats.resend_requests_sent += 1;
    }

    /// Answers a ResendRequest: we never replay application messages (stale orders are
    /// worse than none), so the whole range is covered by one SequenceReset-GapFill.
    fn gap_fill(&mut self, tx: Tx<'_>, now_ns: u64, begin: u64) {
        if begin >= self.next_out {
            return;
        }
        let next = self.next_out;
        self.gap_fill_range(tx.enc, tx.clock, tx.out, now_ns, begin, next);
    }

    fn fail(&mut self, tx: Tx<'_>, now_ns: u64, why: &'static str) -> Inbound<'static> {
        if matches!(self.state, State::Active) {
            self.logout(tx, now_ns, why);
        }
        self.state = State::Closed;
        Inbound::Disconnect(why)
    }

    /// Periodic housekeeping: Heartbeat when we have been quiet, TestRequest when the peer
    /// has, and disconnect when a TestRequest went unanswered.
    pub fn on_tick(&mut self, now_ns: u64, tx: Tx<'_>) -> Tick {
        if self.state != State::Active || self.hb_ns == 0 {
            return Tick::Ok;
        }
        if let Some(sent) = self.test_req_sent_ns {
            if now_ns.saturating_sub(sent) >= self.hb_ns {
                self.state = State::Closed;
                return Tick::Disconnect("TestRequest not answered");
            }
        } else if now_ns.saturating_sub(self.last_recv_ns) >= self.hb_ns + self.hb_ns / 5 {
            self.header(tx.enc, tx.clock, b"1")
                .field_uint(TEST_REQ_ID, now_ns);
            self.test_req_sent_ns = Some(now_ns);
            self.stats.test_requests_sent += 1;
            self.finish(tx.enc, tx.out, now_ns);
            return Tick::Ok;
        }
        if now_ns.saturating_sub(self.last_send_ns) >= self.hb_ns {
            self.header(tx.enc, tx.clock, b"0");
            self.finish(tx.enc, tx.out, now_ns);
            self.stats.heartbeats_sent += 1;
        }
        Tick::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay_store::ReplayStore;
    use fixscope_core::fix::framing::{frame_one, Frame};
    use fixscope_core::fix::message::{display, find_field};

    struct Rig {
        enc: FixEncoder,
        clock: UtcClock,
        out: Vec<u8>,
    }

    impl Rig {
        fn new() -> Self {
            Rig {
                enc: FixEncoder::new(),
                clock: UtcClock::new(),
                out: Vec::new(),
            }
        }
        fn tx(&mut self) -> Tx<'_> {
            Tx {
                enc: &mut self.enc,
                clock: &mut self.clock,
                out: &mut self.out,
            }
        }
        /// Splits and validates everything sent so far, then clears it.
        fn take(&mut self) -> Vec<Vec<u8>> {
            let mut msgs = Vec::new();
            let mut rest = &self.out[..];
            while !rest.is_empty() {
                match frame_one(rest) {
                    Frame::Message { len, checksum_ok } => {
                        assert!(checksum_ok, "{}", display(&rest[..len]));
                        msgs.push(rest[..len].to_vec());
                        rest = &rest[len..];
                    }
                    other => panic!("bad output {other:?}: {}", display(rest)),
                }
            }
            self.out.clear();
            msgs
        }
    }

    fn msg(begin: &str, fields: &[(u32, &str)]) -> Vec<u8> {
        let mut enc = FixEncoder::new();
        enc.start(fields[0].1.as_bytes());
        for &(t, v) in &fields[1..] {
            enc.field_str(t, v);
        }
        let mut out = Vec::new();
        enc.finish(begin.as_bytes(), &mut out);
        out
    }

    fn field(m: &[u8], tag: u32) -> String {
        String::from_utf8_lossy(find_field(m, tag).unwrap_or(b"<none>")).into_owned()
    }

    fn logged_on(begin: &str, extra: &[(u32, &str)]) -> (Session, Rig) {
        let mut s = Session::acceptor("EXCH");
        let mut rig = Rig::new();
        let mut f = vec![
            (35, "A"),
            (49, "CLIENT1"),
            (56, "EXCH"),
            (34, "1"),
            (108, "30"),
            (141, "Y"),
        ];
        f.extend_from_slice(extra);
        assert_eq!(
            s.on_message(&msg(begin, &f), 1, rig.tx()),
            Inbound::LoggedOn
        );
        (s, rig)
    }

    #[test]
    fn acceptor_answers_logon_for_each_begin_string() {
        for begin in ["FIX.4.2", "FIX.4.4", "FIXT.1.1"] {
            let extra: &[(u32, &str)] = if begin == "FIXT.1.1" {
                &[(1137, "9")]
            } else {
                &[]
            };
            let (s, mut rig) = logged_on(begin, extra);
            let out = rig.take();
            assert_eq!(out.len(), 1);
            let m = &out[0];
            assert_eq!(field(m, 8), begin);
            assert_eq!(field(m, 35), "A");
            assert_eq!(field(m, 49), "EXCH");
            assert_eq!(field(m, 56), "CLIENT1");
            assert_eq!(field(m, 34), "1");
            assert_eq!(field(m, 108), "30");
            assert_eq!(field(m, 52).len(), 21);
            if begin == "FIXT.1.1" {
                assert_eq!(field(m, 1137), "9");
            } else {
                assert_eq!(field(m, 1137), "<none>");
            }
            assert_eq!(s.state(), State::Active);
            assert_eq!(s.is_fix42(), begin == "FIX.4.2");
        }
    }

    #[test]
    fn first_message_must_be_logon() {
        let mut s = Session::acceptor("EXCH");
        let mut rig = Rig::new();
        let d = msg("FIX.4.4", &[(35, "D"), (49, "C"), (56, "EXCH"), (34, "1")]);
        assert!(matches!(
            s.on_message(&d, 1, rig.tx()),
            Inbound::Disconnect(_)
        ));
        assert!(rig.take().is_empty());
    }

    #[test]
    fn test_request_gets_heartbeat_with_id() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        rig.take();
        let tr = msg(
            "FIX.4.4",
            &[
                (35, "1"),
                (49, "CLIENT1"),
                (56, "EXCH"),
                (34, "2"),
                (112, "abc"),
            ],
        );
        assert_eq!(s.on_message(&tr, 2, rig.tx()), Inbound::Handled);
        let out = rig.take();
        assert_eq!(out.len(), 1);
        assert_eq!(field(&out[0], 35), "0");
        assert_eq!(field(&out[0], 112), "abc");
        assert_eq!(field(&out[0], 34), "2");
        assert_eq!(s.stats.test_requests_answered, 1);
    }

    #[test]
    fn gap_triggers_resend_request_and_message_still_delivered() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        rig.take();
        let d = msg(
            "FIX.4.4",
            &[
                (35, "D"),
                (49, "CLIENT1"),
                (56, "EXCH"),
                (34, "5"),
                (11, "X"),
            ],
        );
        assert_eq!(s.on_message(&d, 2, rig.tx()), Inbound::App(b"D"));
        let out = rig.take();
        assert_eq!(out.len(), 1);
        assert_eq!(field(&out[0], 35), "2");
        assert_eq!(field(&out[0], 7), "2");
        // The range really missing, not "everything after" (16=0).
        assert_eq!(field(&out[0], 16), "4");
        assert_eq!(s.next_in_seq(), 6);
        assert_eq!(s.stats.gaps_detected, 1);
        // The peer's GapFill for the range (PossDup, below the expected number) is ignored,
        // as is a PossDup resend.
        let gf = msg(
            "FIX.4.4",
            &[
                (35, "4"),
                (49, "CLIENT1"),
                (56, "EXCH"),
                (34, "2"),
                (43, "Y"),
                (123, "Y"),
                (36, "5"),
            ],
        );
        assert_eq!(s.on_message(&gf, 3, rig.tx()), Inbound::Handled);
        assert_eq!(s.next_in_seq(), 6);
        // A GapFill at the expected number moves it forward.
        let gf = msg(
            "FIX.4.4",
            &[
                (35, "4"),
                (49, "CLIENT1"),
                (56, "EXCH"),
                (34, "6"),
                (123, "Y"),
                (36, "9"),
            ],
        );
        assert_eq!(s.on_message(&gf, 4, rig.tx()), Inbound::Handled);
        assert_eq!(s.next_in_seq(), 9);
        assert!(rig.take().is_empty());
    }

    #[test]
    fn too_low_without_poss_dup_is_fatal() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        rig.take();
        let d = msg(
            "FIX.4.4",
            &[(35, "D"), (49, "CLIENT1"), (56, "EXCH"), (34, "1")],
        );
        assert!(matches!(
            s.on_message(&d, 2, rig.tx()),
            Inbound::Disconnect(_)
        ));
        let out = rig.take();
        assert_eq!(field(&out[0], 35), "5");
    }

    #[test]
    fn resend_request_answered_with_gap_fill() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        // Send a few more messages so there is something to fill.
        for _ in 0..3 {
            s.header(&mut rig.enc, &mut rig.clock, b"0");
            s.finish(&mut rig.enc, &mut rig.out, 1);
        }
        rig.take();
        assert_eq!(s.next_out_seq(), 5);
        let rr = msg(
            "FIX.4.4",
            &[
                (35, "2"),
                (49, "CLIENT1"),
                (56, "EXCH"),
                (34, "2"),
                (7, "2"),
                (16, "0"),
            ],
        );
        assert_eq!(s.on_message(&rr, 2, rig.tx()), Inbound::Handled);
        let out = rig.take();
        assert_eq!(out.len(), 1);
        let m = &out[0];
        assert_eq!(field(m, 35), "4");
        assert_eq!(field(m, 34), "2");
        assert_eq!(field(m, 123), "Y");
        assert_eq!(field(m, 43), "Y");
        assert_eq!(field(m, 36), "5");
        // The gap fill does not consume a sequence number.
        assert_eq!(s.next_out_seq(), 5);
        assert_eq!(s.stats.gap_fills_sent, 1);
    }

    #[test]
    fn heartbeat_and_test_request_timers() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        rig.take();
        let sec = 1_000_000_000u64;
        // We sent the Logon at t=1; after 30s of silence we owe a Heartbeat... but the peer
        // has been quiet even longer (36s), so a TestRequest goes first.
        assert_eq!(s.on_tick(31 * sec, rig.tx()), Tick::Ok);
        let out = rig.take();
        assert_eq!(field(&out[0], 35), "0");
        assert_eq!(s.on_tick(37 * sec, rig.tx()), Tick::Ok);
        let out = rig.take();
        assert_eq!(field(&out[0], 35), "1");
        assert_ne!(field(&out[0], 112), "<none>");
        // Unanswered for another interval: disconnect.
        assert!(matches!(s.on_tick(68 * sec, rig.tx()), Tick::Disconnect(_)));
    }

    #[test]
    fn logout_is_answered_and_initiated_logout_completes() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        rig.take();
        let lo = msg(
            "FIX.4.4",
            &[(35, "5"), (49, "CLIENT1"), (56, "EXCH"), (34, "2")],
        );
        assert_eq!(s.on_message(&lo, 2, rig.tx()), Inbound::LoggedOut);
        let out = rig.take();
        assert_eq!(field(&out[0], 35), "5");

        // Initiator side: Logon, Logon reply, our Logout, their Logout -> LoggedOut, no reply.
        let mut c = Session::initiator("FIXT.1.1", "CLIENT1", "EXCH", 30);
        c.logon(rig.tx(), 1);
        let out = rig.take();
        assert_eq!(field(&out[0], 1137), "9");
        assert_eq!(field(&out[0], 141), "Y");
        let reply = msg(
            "FIXT.1.1",
            &[
                (35, "A"),
                (49, "EXCH"),
                (56, "CLIENT1"),
                (34, "1"),
                (108, "30"),
            ],
        );
        assert_eq!(c.on_message(&reply, 2, rig.tx()), Inbound::LoggedOn);
        c.logout(rig.tx(), 3, "");
        assert_eq!(c.state(), State::LogoutSent);
        rig.take();
        let lo = msg(
            "FIXT.1.1",
            &[(35, "5"), (49, "EXCH"), (56, "CLIENT1"), (34, "2")],
        );
        assert_eq!(c.on_message(&lo, 4, rig.tx()), Inbound::LoggedOut);
        assert!(rig.take().is_empty());
    }

    #[test]
    fn resend_replays_app_messages_and_gap_fills_admin_ones() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        s.store = ReplayStore::new(100);
        s.wire.enabled = true;
        rig.take();
        // 2: an order (kept), 3: a Heartbeat (gap-filled), 4: an order.
        for mt in [&b"D"[..], b"0", b"D"] {
            s.header(&mut rig.enc, &mut rig.clock, mt)
                .field(11, b"X")
                .field(55, b"AAPL");
            s.finish(&mut rig.enc, &mut rig.out, 1);
        }
        rig.take();
        let mut out = OutBuf::with_capacity(4096, 16);
        s.resend(&mut rig.enc, &mut rig.clock, &mut out, 2, 1, 4);
        rig.out = out.buf().clone();
        let msgs = rig.take();
        let summary: Vec<(String, String, String, String)> = msgs
            .iter()
            .map(|m| (field(m, 35), field(m, 34), field(m, 43), field(m, 36)))
            .collect();
        let row = |a: &str, b: &str, c: &str, d: &str| {
            (a.to_string(), b.to_string(), c.to_string(), d.to_string())
        };
        assert_eq!(
            summary,
            [
                // The Logon (1) and the Heartbeat (3) are gap-filled, the orders resent.
                row("4", "1", "Y", "2"),
                row("D", "2", "Y", "<none>"),
                row("4", "3", "Y", "4"),
                row("D", "4", "Y", "<none>"),
            ]
        );
        assert_eq!(field(&msgs[1], 55), "AAPL");
        assert_ne!(field(&msgs[1], 122), "<none>");
        assert_eq!(s.wire.sent.possdup_requests, 2);
        assert_eq!(s.wire.sent.gap_fills, 2);
        assert_eq!(s.next_out_seq(), 5, "resends take no new numbers");
    }

    #[test]
    fn a_lost_tail_is_asked_for_and_its_resends_are_not_processed_again() {
        let (mut s, mut rig) = logged_on("FIX.4.4", &[]);
        let d = |seq: &str, dup: bool| {
            let mut f = vec![(35, "D"), (49, "CLIENT1"), (56, "EXCH"), (34, seq)];
            if dup {
                f.push((43, "Y"));
            }
            f.push((11, "X"));
            msg("FIX.4.4", &f)
        };
        for seq in ["2", "3"] {
            assert_eq!(
                s.on_message(&d(seq, false), 2, rig.tx()),
                Inbound::App(b"D")
            );
        }
        rig.take();
        // Reconnect: the store lost 2 and 3; the Logon comes at 5 (4 was queued).
        s.reopen();
        s.forget_inbound(2);
        let logon = msg(
            "FIX.4.4",
            &[
                (35, "A"),
                (49, "CLIENT1"),
                (56, "EXCH"),
                (34, "5"),
                (108, "30"),
            ],
        );
        assert_eq!(s.on_message(&logon, 3, rig.tx()), Inbound::LoggedOn);
        let out = rig.take();
        let rr = out
            .iter()
            .find(|m| field(m, 35) == "2")
            .expect("a ResendRequest");
        assert_eq!((field(rr, 7), field(rr, 16)), ("2".into(), "4".into()));
        // 2 and 3 were processed before: handled; 4 never was: delivered.
        assert_eq!(s.on_message(&d("2", true), 4, rig.tx()), Inbound::Handled);
        assert_eq!(s.on_message(&d("3", true), 4, rig.tx()), Inbound::Handled);
        assert_eq!(s.on_message(&d("4", true), 4, rig.tx()), Inbound::App(b"D"));
        assert_eq!(s.on_message(&d("4", true), 4, rig.tx()), Inbound::Handled);
    }
}
