//! A UUID's orders: how each request is keyed and each CME response is answered.
//!
//! Keys are OrderRequestIDs in decimal. A request is tracked under its own; a response
//! answers the one it echoes — 522 its NewOrderSingle's, 531 and 534 the replace's or
//! cancel's. An order's *entry* is the key its executions go to: its NewOrderSingle's,
//! then, once a replace is confirmed (531), the replace's, learned by OrderID (CME's id of
//! the order, which 522 and every later report carry). Fills and CME's own reports
//! (Elimination, Status, a cancel no request asked for) go to the order's entry whatever
//! OrderRequestID they echo: which one a fill after a modify echoes is not stated in a CME
//! text, and this way either answer pairs.

use std::collections::VecDeque;

use hashbrown::{HashMap, HashSet};

use fixscope_protocol::{RequestType, ResponseCode, ResponseKind};

use super::Ilink3Event;
use crate::messages::{BusinessReject, Report, Request};
use crate::schema;
use crate::session::{Ilink3Counters, Key};

/// How many client SeqNum → OrderRequestID pairs a UUID keeps for BusinessReject521's
/// RefSeqNum: CME answers a request within moments, so the last this many are ample and
/// the memory stays bounded on a long session.
const REJECTABLE_REQUESTS: usize = 65_536;

/// A replace or cancel waiting for its answer, by its own OrderRequestID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    Replace,
    Cancel,
}

#[derive(Debug, Default)]
pub(crate) struct OrderBook {
    /// Every OrderRequestID seen (requests' and responses'): one seen again in a request
    /// is a resend; a response echoing one never seen is about an order this run missed.
    seen: HashSet<u64>,
    /// Orders not ended: OrderID → the key of the order's entry.
    entries: HashMap<u64, Key>,
    /// Orders entered whose OrderID is not known yet (no 522 seen), by key.
    entered: HashSet<Key>,
    /// Replaces and cancels waiting for their answer, by OrderRequestID.
    pending: HashMap<u64, Pending>,
    /// Client SeqNum → OrderRequestID of the latest requests (BusinessReject521).
    by_seq: HashMap<u32, u64>,
    by_seq_order: VecDeque<u32>,
}

impl OrderBook {
    pub(crate) fn open_orders(&self) -> usize {
        self.entries.len() + self.entered.len()
    }

    /// A client order request: tracked under its OrderRequestID; one seen before on the
    /// UUID is a resend (counted), which leaves the orders' state as it was.
    pub(crate) fn request(
        &mut self,
        request_type: RequestType,
        code: ResponseCode,
        r: &Request<'_>,
        c: &mut Ilink3Counters,
    ) -> Ilink3Event {
        let id = r.order_request_id;
        let key = Key::decimal(id);
        let resend = !self.seen.insert(id);
        if resend {
            c.ilink3_resent_requests += 1;
        } else {
            match request_type {
                RequestType::Replace => {
                    self.pending.insert(id, Pending::Replace);
                }
                RequestType::Cancel => {
                    self.pending.insert(id, Pending::Cancel);
                }
                _ => {
                    self.entered.insert(key);
                }
            }
        }
        self.remember_seq(r.seq_num, id);
        Ilink3Event::Request {
            request_type,
            key,
            resend,
            code,
        }
    }

    fn remember_seq(&mut self, seq: u32, id: u64) {
        if self.by_seq.insert(seq, id).is_none() {
            self.by_seq_order.push_back(seq);
        }
        if self.by_seq_order.len() > REJECTABLE_REQUESTS {
            if let Some(old) = self.by_seq_order.pop_front() {
                self.by_seq.remove(&old);
            }
        }
    }

    /// The key of the OrderRequestID a response echoes; counted when never seen.
    fn echoed(&mut self, id: Option<u64>, c: &mut Ilink3Counters) -> Option<Key> {
        let id = id?;
        if self.seen.insert(id) {
            c.ilink3_unknown_order_responses += 1;
        }
        Some(Key::decimal(id))
    }

    /// The key of the order's entry: by its OrderID, else the OrderRequestID echoed.
    fn entry_of(&mut self, r: &Report<'_>, c: &mut Ilink3Counters) -> Option<Key> {
        if let Some(k) = r.order_id.and_then(|o| self.entries.get(&o)) {
            return Some(*k);
        }
        let key = self.echoed(r.order_request_id, c);
        if key.is_none() {
            c.ilink3_unknown_order_responses += 1;
        }
        key
    }

    /// The order is over: no longer open.
    fn end(&mut self, r: &Report<'_>, key: Key) {
        if let Some(o) = r.order_id {
            self.entries.remove(&o);
        }
        self.entered.remove(&key);
    }

    /// A new CME execution report (or cancel / replace reject); `None` when it names no
    /// order at all (counted as unknown).
    pub(crate) fn report(&mut self, r: &Report<'_>, c: &mut Ilink3Counters) -> Option<Ilink3Event> {
        use schema::*;
        let none = Key::default();
        let id = r.template_id;
        let (key, kind, ends) = match id {
            execution_report_new_522::ID => {
                let key = self
                    .echoed(r.order_request_id, c)
                    .or_else(|| self.entry_of(r, c))?;
                self.entered.remove(&key);
                if let Some(o) = r.order_id {
                    self.entries.insert(o, key);
                }
                (key, ack(), none)
            }
            execution_report_reject_523::ID => {
                let key = self
                    .echoed(r.order_request_id, c)
                    .or_else(|| self.entry_of(r, c))?;
                self.end(r, key);
                (key, rejected(), none)
            }
            execution_report_elimination_524::ID => {
                let key = self.entry_of(r, c)?;
                self.end(r, key);
                (key, venue(true), none)
            }
            execution_report_trade_outright_525::ID | execution_report_trade_spread_526::ID => {
                let key = self.entry_of(r, c)?;
                // OrdStatusTrd 2 = Filled; LeavesQty 0 says the same.
                let over = r.leaves_qty == Some(0) || r.ord_status == Some(2);
                if over {
                    self.end(r, key);
                }
                let kind = ResponseKind {
                    fill: true,
                    terminal: over,
                    ..ResponseKind::default()
                };
                (key, kind, none)
            }
            execution_report_trade_spread_leg_527::ID => {
                // A leg's execution of a spread order (no OrderRequestID of its own): a fill
                // of one leg, the spread's own report (526) says when it is over.
                let key = self.entry_of(r, c)?;
                let kind = ResponseKind {
                    fill: true,
                    multileg: true,
                    ..ResponseKind::default()
                };
                (key, kind, none)
            }
            execution_report_modify_531::ID => self.modified(r, c)?,
            execution_report_status_532::ID => {
                let key = self.entry_of(r, c)?;
                let over = matches!(r.ord_status, Some(b'2' | b'4' | b'8' | b'C'));
                if over {
                    self.end(r, key);
                }
                let kind = ResponseKind {
                    unsolicited: true,
                    terminal: over,
                    ..ResponseKind::default()
                };
                (key, kind, none)
            }
            execution_report_cancel_534::ID => self.cancelled(r, c)?,
            order_cancel_reject_535::ID | order_cancel_replace_reject_536::ID => {
                // The cancel (replace) request is over, refused; the order lives.
                let key = self.echoed(r.order_request_id, c)?;
                if let Some(ori) = r.order_request_id {
                    self.pending.remove(&ori);
                }
                (key, rejected(), none)
            }
            execution_report_pending_cancel_564::ID | execution_report_pending_replace_565::ID => {
                // As FIX's 150=6 / 150=E: the request's ack, its answer still to come.
                let key = self.echoed(r.order_request_id, c)?;
                (key, ack(), none)
            }
            _ => return None,
        };
        Some(Ilink3Event::Response {
            key,
            kind,
            ends,
            code: code(id),
        })
    }

    /// ExecutionReportModify531: the ack of the replace whose OrderRequestID it echoes,
    /// ending the order's previous entry, which the replace's key now is. A modify no
    /// request of this run asked for (echoing the entry's own id) is unsolicited.
    fn modified(
        &mut self,
        r: &Report<'_>,
        c: &mut Ilink3Counters,
    ) -> Option<(Key, ResponseKind, Key)> {
        let none = Key::default();
        let previous = r.order_id.and_then(|o| self.entries.get(&o).copied());
        let asked = r
            .order_request_id
            .is_some_and(|ori| self.pending.remove(&ori) == Some(Pending::Replace));
        let key = self.echoed(r.order_request_id, c).or(previous)?;
        if !asked && previous == Some(key) {
            let kind = ResponseKind {
                unsolicited: true,
                ..ResponseKind::default()
            };
            return Some((key, kind, none));
        }
        if let Some(o) = r.order_id {
            self.entries.insert(o, key);
        }
        let ends = previous.filter(|p| *p != key).unwrap_or(none);
        self.entered.remove(&ends);
        let kind = ResponseKind {
            ends_original: true,
            ..ack()
        };
        Some((key, kind, ends))
    }

    /// ExecutionReportCancel534: the ack of the cancel whose OrderRequestID it echoes,
    /// ending the order; with no such cancel waiting, CME's own cancel (cancel on
    /// disconnect, a mass cancel) of the order's entry.
    fn cancelled(
        &mut self,
        r: &Report<'_>,
        c: &mut Ilink3Counters,
    ) -> Option<(Key, ResponseKind, Key)> {
        let none = Key::default();
        let asked = r
            .order_request_id
            .is_some_and(|ori| self.pending.remove(&ori) == Some(Pending::Cancel));
        if !asked {
            let key = self.entry_of(r, c)?;
            self.end(r, key);
            return Some((key, venue(true), none));
        }
        let key = self.echoed(r.order_request_id, c)?;
        let entry = r.order_id.and_then(|o| self.entries.get(&o).copied());
        let ends = entry.filter(|e| *e != key).unwrap_or(none);
        self.end(r, ends);
        let kind = ResponseKind {
            terminal: true,
            ends_original: true,
            ..ack()
        };
        Some((key, kind, ends))
    }

    /// BusinessReject521: the reject of the client request numbered RefSeqNum.
    pub(crate) fn business_reject(
        &mut self,
        b: &BusinessReject,
        c: &mut Ilink3Counters,
    ) -> Option<Ilink3Event> {
        let Some(id) = b.ref_seq_num.and_then(|s| self.by_seq.get(&s).copied()) else {
            c.ilink3_business_rejects_unpaired += 1;
            return None;
        };
        let key = Key::decimal(id);
        self.pending.remove(&id);
        self.entered.remove(&key);
        Some(Ilink3Event::Response {
            key,
            kind: rejected(),
            ends: Key::default(),
            code: code(schema::business_reject_521::ID),
        })
    }
}

/// A response's code: its template id in decimal ("522").
pub(super) fn code(template_id: u16) -> ResponseCode {
    ResponseCode::of(Key::decimal(u64::from(template_id)).as_bytes())
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

/// CME ended the order on its own (an IOC's remainder, cancel on disconnect).
fn venue(terminal: bool) -> ResponseKind {
    ResponseKind {
        terminal,
        venue_initiated: true,
        ..ResponseKind::default()
    }
}
