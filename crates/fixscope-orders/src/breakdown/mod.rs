//! The in-host breakdown of an order's latency (`--breakdown`): where between the wire and
//! the application the time of `first_response` went.
//!
//! The live source hands over the application's socket calls ([`SocketEvent`]) beside the
//! segments. Each call is placed on the TCP stream by **sequence number**, never by time: a
//! read covers `[seq, seq + len)` of the request stream, a write the same of the response
//! stream. For an order whose first response is matched (server role):
//!
//! ```text
//!  request's last byte ──wire_to_read──▶ read returning it ──app──▶ write carrying the
//!  at TC ingress (T_req)                 (its return)               response's first byte
//!                                                                   (its entry) ──write_to_wire──▶
//!                                                                   response's first byte at TC egress (T_resp)
//! ```
//!
//! The endpoints are the very timestamps `first_response` uses (the timing rule: request's
//! last byte, response's first byte), so `wire_to_read + app + write_to_wire ==
//! first_response` exactly, order by order. `sched_delay` is the reading thread's wakeup →
//! on-CPU time, recorded only when the wakeup came at or after `T_req` (it slept waiting for
//! this request). Client role (the watched host sends the requests): `write_to_wire` = entry
//! of the write carrying the request's last byte → that byte at TC egress; `wire_to_read` =
//! the response's first byte at TC ingress → return of the read holding it; `app` does not
//! apply (the time between is the peer's and the network's: `first_response`); `sched_delay`
//! as above for the thread that read the response.
//!
//! Calls and segments may come in any order (the live source drains two rings): an order
//! whose calls are not seen yet waits in a bounded table and is finished when they come;
//! it is given up (counted `breakdown_missing`) once the calls seen are [`AWAIT_NS`] past it
//! (also after its connection closed: calls made before the close may still be on their
//! way), when the table is full, or at the end of the run. A stage that cannot be
//! measured exactly is not recorded; an order whose stages would be negative (clock or
//! ordering anomaly) records none of them (`breakdown_negative`), so the three always sum to
//! its `first_response`.

mod calls;

use std::collections::VecDeque;

use hashbrown::HashMap;

use crate::consumer::OrderSink;
use crate::correlate::Stage;
use crate::slowest::OrderRef;
use fixscope_model::order::Latency;
use fixscope_model::ports::Role;
use fixscope_model::segment::{ConnectionKey, Direction};
use fixscope_model::socket_event::{SocketCall, SocketEvent};

use calls::CallLog;
pub use calls::MAX_CALLS;

/// How far the socket calls' own clock (the latest call seen) must be past an order before
/// it is given up: the calls come on a ring of their own, which may be drained seconds after
/// the segments' ring, so the wall clock alone would give up orders whose calls are merely
/// late.
pub const AWAIT_NS: u64 = 10_000_000_000;
/// Orders waiting for their socket calls at once; beyond it the oldest is given up.
pub const MAX_AWAITING: usize = 65_536;

pub use fixscope_model::order::OrderBreakdown;

pub use fixscope_model::counters::breakdown::{counters_if_present, BreakdownCounters};

/// An order waiting for its socket calls, with what its slow-order entries need.
#[derive(Debug)]
struct Awaiting {
    latency: Latency,
    response_seq: u32,
    response_ts_ns: u64,
    key: Vec<u8>,
    response_msg_type: Vec<u8>,
    exec_type: Option<u8>,
    ord_status: Option<u8>,
}

/// Per connection: its socket calls and the orders waiting for some.
#[derive(Debug, Default)]
struct Conn {
    calls: CallLog,
    awaiting: VecDeque<Awaiting>,
    /// When its TCP connection closed (FIN, RST, idle, shed): its calls may still be on
    /// their way (the live source's two rings drift apart), so it lingers [`AWAIT_NS`].
    closed_ns: Option<u64>,
}

/// The breakdown of every order of a run.
#[derive(Debug, Default)]
pub struct Breakdown {
    /// Whose calls time the orders: the acceptor's (server) or the initiator's (client).
    role: Role,
    conns: HashMap<ConnectionKey, Conn>,
    awaiting: usize,
    last_sweep_ns: u64,
    /// The latest socket call's time: how far the calls' ring has been drained.
    calls_ns: u64,
    pub counters: BreakdownCounters,
}

/// What resolving an order found.
enum Resolved {
    Done(OrderBreakdown),
    /// A stage would be negative: nothing recorded.
    Negative,
    Wait,
}

impl Breakdown {
    pub fn new(role: Role) -> Self {
        Breakdown {
            role,
            ..Self::default()
        }
    }

    /// One socket call: logged on its connection, and the orders it completes are recorded.
    pub fn on_socket_event(&mut self, ev: &SocketEvent, stats: &mut impl OrderSink) {
        self.counters.breakdown_calls += 1;
        self.calls_ns = self.calls_ns.max(ev.ts_ns);
        let key = connection_of(ev);
        let conn = self.conns.entry(key).or_default();
        self.counters.breakdown_calls_evicted += conn.calls.push(ev);
        if conn.awaiting.is_empty() {
            return;
        }
        // Only the orders whose byte this call holds can be completed by it: one cheap
        // comparison per waiting order, the lookups only for those (when the calls' ring
        // lags, thousands of orders wait and calls come by the thousand).
        let needs = |a: &Awaiting| match (self.role, ev.direction, ev.call) {
            (Role::Server, Direction::Request, SocketCall::Read)
            | (Role::Client, Direction::Request, SocketCall::Write) => {
                calls::holds(ev.seq, ev.len, a.latency.request_seq)
            }
            (Role::Server, Direction::Response, SocketCall::Write)
            | (Role::Client, Direction::Response, SocketCall::Read) => {
                calls::holds(ev.seq, ev.len, a.response_seq)
            }
            _ => false,
        };
        let (role, counters, awaiting) = (self.role, &mut self.counters, &mut self.awaiting);
        let calls = &conn.calls;
        conn.awaiting.retain(|a| {
            if !needs(a) {
                return true;
            }
            let resolved = resolve(role, calls, &a.latency, a.response_seq, a.response_ts_ns);
            if matches!(resolved, Resolved::Wait) {
                return true;
            }
            *awaiting -= 1;
            let order = OrderRef {
                key: &a.key,
                response_msg_type: &a.response_msg_type,
                exec_type: a.exec_type,
                ord_status: a.ord_status,
                response_ts_ns: a.response_ts_ns,
                breakdown: None,
            };
            if let Some(b) = finish(counters, resolved, &a.latency, &order, stats) {
                stats.attach_breakdown(a.latency.session, a.latency.request_ts_ns, &b);
            }
            false
        });
    }

    /// A first response was matched on connection `conn`; `response_seq` is the sequence
    /// number of its first byte. Records the breakdown now if its calls are known (and
    /// returns it, for the order's slow-order entries), else keeps the order waiting.
    pub fn on_first_response(
        &mut self,
        conn: ConnectionKey,
        latency: &Latency,
        response_seq: u32,
        order: &OrderRef<'_>,
        stats: &mut impl OrderSink,
    ) -> Option<OrderBreakdown> {
        let c = self.conns.entry(conn).or_default();
        match resolve(
            self.role,
            &c.calls,
            latency,
            response_seq,
            order.response_ts_ns,
        ) {
            Resolved::Wait => {
                if self.awaiting >= MAX_AWAITING {
                    self.give_up_oldest();
                }
                let c = self.conns.entry(conn).or_default();
                c.awaiting.push_back(Awaiting {
                    latency: *latency,
                    response_seq,
                    response_ts_ns: order.response_ts_ns,
                    key: order.key.to_vec(),
                    response_msg_type: order.response_msg_type.to_vec(),
                    exec_type: order.exec_type,
                    ord_status: order.ord_status,
                });
                self.awaiting += 1;
                None
            }
            resolved => finish(&mut self.counters, resolved, latency, order, stats),
        }
    }

    /// The connection closed at `now_ns`: calls already made may still come, so its
    /// waiting orders wait out [`AWAIT_NS`], then are given up with it.
    pub fn connection_closed(&mut self, conn: &ConnectionKey, now_ns: u64) {
        if let Some(c) = self.conns.get_mut(conn) {
            c.closed_ns.get_or_insert(now_ns);
        }
    }

    /// A new connection on `conn`'s 4-tuple: what a closed one left there is not its (a
    /// reused port); its waiting orders are given up now. Calls that came before the new
    /// connection's first segment stay.
    pub fn connection_opened(&mut self, conn: &ConnectionKey) {
        if self.conns.get(conn).is_some_and(|c| c.closed_ns.is_some()) {
            self.drop_connection(conn);
        }
    }

    /// Forgets `conn` now (port reuse seen by its SYN); its waiting orders are given up.
    pub fn drop_connection(&mut self, conn: &ConnectionKey) {
        if let Some(c) = self.conns.remove(conn) {
            self.awaiting -= c.awaiting.len();
            self.counters.breakdown_missing += c.awaiting.len() as u64;
        }
    }

    /// Gives up orders (and closed connections) the calls' clock is [`AWAIT_NS`] past
    /// (looked at most every 100 ms of `now_ns`, the source's clock).
    pub fn expire(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.last_sweep_ns) < 100_000_000 {
            return;
        }
        self.last_sweep_ns = now_ns;
        let cutoff = now_ns.min(self.calls_ns).saturating_sub(AWAIT_NS);
        // Closed connections that lingered long enough go, their waiting orders given up.
        for (_, c) in self
            .conns
            .extract_if(|_, c| c.closed_ns.is_some_and(|t| t < cutoff))
        {
            self.awaiting -= c.awaiting.len();
            self.counters.breakdown_missing += c.awaiting.len() as u64;
        }
        for c in self.conns.values_mut() {
            while c
                .awaiting
                .front()
                .is_some_and(|a| a.response_ts_ns < cutoff)
            {
                c.awaiting.pop_front();
                self.awaiting -= 1;
                self.counters.breakdown_missing += 1;
            }
        }
    }

    /// Orders waiting for their socket calls now.
    pub fn awaiting(&self) -> usize {
        self.awaiting
    }

    /// End of the run: whatever still waits is given up.
    pub fn finish_run(&mut self) {
        self.counters.breakdown_missing += self.awaiting as u64;
        self.awaiting = 0;
        for c in self.conns.values_mut() {
            c.awaiting.clear();
        }
    }

    fn give_up_oldest(&mut self) {
        let oldest = self
            .conns
            .values_mut()
            .filter(|c| !c.awaiting.is_empty())
            .min_by_key(|c| c.awaiting.front().map_or(u64::MAX, |a| a.response_ts_ns));
        if let Some(c) = oldest {
            c.awaiting.pop_front();
            self.awaiting -= 1;
            self.counters.breakdown_missing += 1;
        }
    }
}

/// The connection a socket call belongs to (as [`fixscope_model::Segment::connection`]).
fn connection_of(ev: &SocketEvent) -> ConnectionKey {
    ConnectionKey::of(ev.flow, ev.direction)
}

/// The order's stages from the calls known now. `latency` is its `first_response`.
fn resolve(
    role: Role,
    calls: &CallLog,
    latency: &Latency,
    response_seq: u32,
    response_ts_ns: u64,
) -> Resolved {
    let request_ts = latency.request_ts_ns;
    let request_seq = latency.request_seq;
    let diff = |later: u64, earlier: u64| later.checked_sub(earlier);
    match role {
        Role::Server => {
            let (Some(read), Some(write)) = (
                calls.find(Direction::Request, SocketCall::Read, request_seq),
                calls.find(Direction::Response, SocketCall::Write, response_seq),
            ) else {
                return Resolved::Wait;
            };
            let (Some(w2r), Some(app), Some(w2w)) = (
                diff(read.ts_ns, request_ts),
                diff(write.ts_ns, read.ts_ns),
                diff(response_ts_ns, write.ts_ns),
            ) else {
                return Resolved::Negative;
            };
            debug_assert_eq!(w2r + app + w2w, latency.ns);
            Resolved::Done(OrderBreakdown {
                wire_to_read: Some(w2r),
                app: Some(app),
                write_to_wire: Some(w2w),
                sched_delay: sched_delay(read.wakeup, request_ts),
            })
        }
        Role::Client => {
            let (Some(write), Some(read)) = (
                calls.find(Direction::Request, SocketCall::Write, request_seq),
                calls.find(Direction::Response, SocketCall::Read, response_seq),
            ) else {
                return Resolved::Wait;
            };
            let (Some(w2w), Some(w2r)) = (
                diff(request_ts, write.ts_ns),
                diff(read.ts_ns, response_ts_ns),
            ) else {
                return Resolved::Negative;
            };
            Resolved::Done(OrderBreakdown {
                wire_to_read: Some(w2r),
                app: None,
                write_to_wire: Some(w2w),
                sched_delay: sched_delay(read.wakeup, response_ts_ns),
            })
        }
    }
}

/// The reading thread's wakeup → on-CPU time, when it woke at or after `since_ns` (it
/// slept waiting for these bytes). A reversed pair is not a number (`None`).
fn sched_delay(wakeup: Option<fixscope_model::socket_event::Wakeup>, since_ns: u64) -> Option<u64> {
    let w = wakeup?;
    if w.woken_ns < since_ns {
        return None;
    }
    w.on_cpu_ns.checked_sub(w.woken_ns)
}

/// Records a resolved order's stages; returns its breakdown.
fn finish(
    counters: &mut BreakdownCounters,
    resolved: Resolved,
    latency: &Latency,
    order: &OrderRef<'_>,
    stats: &mut impl OrderSink,
) -> Option<OrderBreakdown> {
    let b = match resolved {
        Resolved::Done(b) => b,
        Resolved::Negative => {
            counters.breakdown_negative += 1;
            return None;
        }
        Resolved::Wait => return None,
    };
    counters.breakdown_orders += 1;
    if b.sched_delay.is_none() {
        counters.sched_delay_not_waiting += 1;
    }
    let order = OrderRef {
        breakdown: Some(b),
        ..*order
    };
    for stage in Stage::BREAKDOWN {
        if let Some(ns) = b.get(stage) {
            stats.record_order(
                Latency {
                    stage,
                    ns,
                    ..*latency
                },
                &order,
            );
        }
    }
    Some(b)
}
