//! Order records (`--records`): one row per request — what it was, its stage latencies and
//! what became of it — kept beside the pending table only when asked, so a run without
//! records pays one branch per request and per response.
//!
//! A row opens when its request is tracked (in a side table indexed by the pending slot:
//! the slot itself is full at two cache lines), takes each latency the correlator records,
//! and is done when the order leaves the table (terminal response, eviction, closed
//! connection, the end of the run) or at once for a request never tracked. Its
//! [`Outcome`] is the count the order landed in, so a query over the rows gives the run's
//! accounting exactly.

use fixscope_fix::facts::MessageFacts;
use fixscope_model::order::{RequestType, Stage};

/// Rows kept for reuse at most.
const SPARE_ROWS: usize = 4096;

/// What became of an order: the accounting count it landed in (`matched` split into
/// `matched`, `late` and `rejected`; `unanswered` into its reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered on time by an execution report.
    Matched,
    /// Answered after `-t` (counted `timed_out`, then `late`).
    Late,
    /// Answered by a reject (35=9, 150=8, a session or business reject).
    Rejected,
    /// Never answered, still waiting at the end of the run (or of the capture).
    Unanswered,
    /// Never answered: evicted because `-m` requests were tracked.
    Evicted,
    /// Never answered: its connection closed first.
    Closed,
    /// Never tracked: no key, or its key was already pending on the session.
    Untracked,
    /// One of its responses is stamped before it: no latency.
    ResponseBeforeRequest,
    /// Waiting across a hole in its session's responses: answered, not measured.
    AnsweredAfterCaptureHole,
}

impl Outcome {
    /// The name in records (and in the counters it matches).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::Late => "late",
            Outcome::Rejected => "rejected",
            Outcome::Unanswered => "unanswered",
            Outcome::Evicted => "evicted",
            Outcome::Closed => "closed",
            Outcome::Untracked => "untracked",
            Outcome::ResponseBeforeRequest => "response_before_request",
            Outcome::AnsweredAfterCaptureHole => "answered_after_capture_hole",
        }
    }
}

/// The request's own fields a record keeps (read from the message only when records are
/// on; empty when absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestFields {
    pub cl_ord_id: Vec<u8>,
    pub symbol: Vec<u8>,
    pub side: Vec<u8>,
    pub account: Vec<u8>,
    /// A binary protocol's request: its message type as the protocol names it (OUCH
    /// `O`, iLink 3 `514`); empty for FIX, whose request type names it.
    pub msg_type: Vec<u8>,
}

impl RequestFields {
    /// Reads ClOrdID (11), Symbol (55), Side (54) and Account (1) of `message` into `self`
    /// in a pass of its own (buffers reused; the first of a repeated tag counts): the
    /// tests' reference for [`RequestFields::set`] (the pipeline reads them in the
    /// correlation's pass).
    #[cfg(test)]
    pub(crate) fn read(&mut self, message: &[u8]) {
        use fixscope_fix::message::Fields;
        self.clear();
        let mut left = 4;
        for (tag, value) in Fields::new(message) {
            let out = match tag {
                11 => &mut self.cl_ord_id,
                55 => &mut self.symbol,
                54 => &mut self.side,
                1 => &mut self.account,
                _ => continue,
            };
            if out.is_empty() {
                out.extend_from_slice(value);
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
    }

    /// The fields [`MessageFacts::extract_with`] read (buffers reused).
    pub fn set(&mut self, facts: &MessageFacts<'_>) {
        self.set_parts(
            b"",
            facts.cl_ord_id,
            [facts.symbol, facts.side, facts.account],
        );
    }

    /// A binary protocol's request: its message type (`msg_type`), its order's id as
    /// shown, and its instrument, side and account (the seam's `Role::ALL`, empty where
    /// the protocol has none) — buffers reused.
    pub fn set_parts(&mut self, msg_type: &[u8], id: &[u8], roles: [&[u8]; 3]) {
        let [symbol, side, account] = roles;
        for (out, value) in [
            (&mut self.msg_type, msg_type),
            (&mut self.cl_ord_id, id),
            (&mut self.symbol, symbol),
            (&mut self.side, side),
            (&mut self.account, account),
        ] {
            out.clear();
            out.extend_from_slice(value);
        }
    }

    /// Every field absent (buffers kept).
    fn clear(&mut self) {
        for field in [
            &mut self.cl_ord_id,
            &mut self.symbol,
            &mut self.side,
            &mut self.account,
            &mut self.msg_type,
        ] {
            field.clear();
        }
    }
}

/// One order's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderRecord {
    /// The correlator's session scope (the pipeline maps it to its session).
    pub scope: u64,
    /// The correlation key (tag values joined by SOH).
    pub key: Vec<u8>,
    pub request_type: RequestType,
    /// When the request was seen (source clock); `None` when a response came first.
    pub request_ts_ns: Option<u64>,
    /// The request's MsgSeqNum (34; 0 when absent).
    pub msg_seq: u32,
    pub fields: RequestFields,
    pub first_response_ns: Option<u64>,
    pub ack_ns: Option<u64>,
    pub fill_ns: Option<u64>,
    pub outcome: Outcome,
    /// No response within `-t` (counted `timed_out`).
    pub timed_out: bool,
}

/// The rows of the orders tracked now (by pending slot) and of those done since the last
/// [`RecordBook::take_done`].
///
/// Rows are boxed: a row (about 200 bytes) moves from the spares to its slot, to the done
/// rows and back as a pointer, and is written where it lives — moved whole, its copies were
/// stage B's largest `memmove` in the profile (BENCHMARKS.md §2o).
#[derive(Default)]
pub struct RecordBook {
    open: Vec<Option<Box<OrderRecord>>>,
    #[allow(clippy::vec_box)] // moved as pointers (above)
    done: Vec<Box<OrderRecord>>,
    /// Rows handed back after use ([`RecordBook::recycle`]): a row's buffers are reused,
    /// so steady state allocates nothing per order.
    #[allow(clippy::vec_box)] // moved as pointers (above)
    spare: Vec<Box<OrderRecord>>,
    /// The fields of the request being tracked (set by the router before the correlator
    /// sees it).
    pub fields: RequestFields,
}

/// How an answer changes a row.
pub(super) struct Answered {
    pub first: bool,
    pub late: bool,
    pub rejected: bool,
    pub after_hole: bool,
    pub reversed: bool,
}

impl RecordBook {
    /// A row for a request, its outcome to be decided (`Unanswered` until it is).
    pub(super) fn row(
        &mut self,
        scope: u64,
        key: &[u8],
        request_type: RequestType,
        request_ts_ns: Option<u64>,
        msg_seq: u32,
    ) -> Box<OrderRecord> {
        let mut row = self.spare.pop().unwrap_or_else(|| {
            Box::new(OrderRecord {
                scope: 0,
                key: Vec::new(),
                request_type,
                request_ts_ns: None,
                msg_seq: 0,
                fields: RequestFields::default(),
                first_response_ns: None,
                ack_ns: None,
                fill_ns: None,
                outcome: Outcome::Unanswered,
                timed_out: false,
            })
        });
        row.scope = scope;
        row.key.clear();
        row.key.extend_from_slice(key);
        row.request_type = request_type;
        row.request_ts_ns = request_ts_ns;
        row.msg_seq = msg_seq;
        // The request's fields were read for this row: taken, not copied (the row's old
        // buffers are cleared at the next read).
        std::mem::swap(&mut row.fields, &mut self.fields);
        self.fields.clear();
        row.first_response_ns = None;
        row.ack_ns = None;
        row.fill_ns = None;
        row.outcome = Outcome::Unanswered;
        row.timed_out = false;
        row
    }

    /// The request in `slot` is tracked from now on.
    pub(super) fn open(&mut self, slot: u32, row: Box<OrderRecord>) {
        let slot = slot as usize;
        if self.open.len() <= slot {
            self.open.resize(slot + 1, None);
        }
        self.open[slot] = Some(row);
    }

    /// A request done at once (never tracked).
    pub(super) fn done_now(&mut self, mut row: Box<OrderRecord>, outcome: Outcome) {
        row.outcome = outcome;
        self.done.push(row);
    }

    /// A latency of the order in `slot` was recorded.
    pub(super) fn latency(&mut self, slot: u32, stage: Stage, ns: u64) {
        if let Some(Some(row)) = self.open.get_mut(slot as usize) {
            match stage {
                Stage::FirstResponse => row.first_response_ns = Some(ns),
                Stage::Ack => row.ack_ns = Some(ns),
                Stage::Fill => row.fill_ns = Some(ns),
                _ => {}
            }
        }
    }

    /// The order in `slot` was answered: its outcome, when this was its first answer.
    pub(super) fn answered(&mut self, slot: u32, a: Answered) {
        let Some(Some(row)) = self.open.get_mut(slot as usize) else {
            return;
        };
        if a.reversed {
            row.outcome = Outcome::ResponseBeforeRequest;
        } else if a.first {
            row.outcome = if a.after_hole {
                Outcome::AnsweredAfterCaptureHole
            } else if a.late {
                Outcome::Late
            } else if a.rejected {
                Outcome::Rejected
            } else {
                Outcome::Matched
            };
        }
    }

    /// The order in `slot` was counted `timed_out`.
    pub(super) fn timed_out(&mut self, slot: u32) {
        if let Some(Some(row)) = self.open.get_mut(slot as usize) {
            row.timed_out = true;
        }
    }

    /// The order in `slot` leaves the table; `unanswered` is its outcome if it never was
    /// answered (evicted, closed, or still waiting at the end).
    pub(super) fn close(&mut self, slot: u32, unanswered: Outcome) {
        if let Some(Some(mut row)) = self.open.get_mut(slot as usize).map(Option::take) {
            if row.outcome == Outcome::Unanswered {
                row.outcome = unanswered;
            }
            self.done.push(row);
        }
    }

    /// The rows done since the last call (their buffer handed over; `into` is cleared
    /// first and keeps its capacity for the next call).
    #[allow(clippy::vec_box)] // the rows' own vector, swapped (see `RecordBook`)
    pub fn take_done(&mut self, into: &mut Vec<Box<OrderRecord>>) {
        self.recycle(into);
        std::mem::swap(into, &mut self.done);
    }

    /// Rows taken and used: their buffers serve the next orders (a bounded number kept).
    #[allow(clippy::vec_box)] // the rows' own vector (see `RecordBook`)
    pub fn recycle(&mut self, used: &mut Vec<Box<OrderRecord>>) {
        let room = SPARE_ROWS.saturating_sub(self.spare.len());
        self.spare.extend(used.drain(..).take(room));
    }

    /// Whether rows are waiting to be taken.
    pub fn has_done(&self) -> bool {
        !self.done.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlate::{KeySpec, MessageFacts};
    use fixscope_fix::encode::test_message as encode;

    /// The order fields read in the correlation's pass are what a pass of their own reads
    /// (`RequestFields::read`): in any order, repeated (the first counts), absent, with a
    /// key on other tags, and on responses.
    #[test]
    fn order_fields_read_in_one_pass_equal_their_own_pass() {
        let fields: [(u32, &str); 8] = [
            (1, "ACCT-7"),
            (11, "ORD-1"),
            (54, "1"),
            (55, "AAPL"),
            (11, "ORD-2"),
            (55, "MSFT"),
            (38, "100"),
            (37, "X9"),
        ];
        let keys = [KeySpec::default(), KeySpec::parse("37").unwrap()];
        for mt in ["D", "F", "G", "8"] {
            for take in 0..=fields.len() {
                for rotate in 0..fields.len() {
                    let mut body: Vec<(u32, &str)> =
                        vec![(35, mt), (49, "S"), (56, "T"), (34, "3")];
                    let mut picked = fields[..take].to_vec();
                    picked.rotate_left(rotate.min(take.saturating_sub(1)));
                    body.extend(picked);
                    let m = encode(&body);
                    let mut own = RequestFields::default();
                    own.read(&m);
                    for key in &keys {
                        let f = MessageFacts::extract_with::<true>(&m, key);
                        let mut fused = RequestFields::default();
                        fused.set(&f);
                        if mt != "8" {
                            assert_eq!(fused, own, "35={mt} {body:?}");
                        }
                        // The correlation's own facts do not change.
                        let plain = MessageFacts::extract(&m, key);
                        assert_eq!(f.msg_seq_num, plain.msg_seq_num);
                        assert_eq!(f.key(key, &mut Vec::new()), plain.key(key, &mut Vec::new()));
                    }
                }
            }
        }
    }
}
