//! The router's order handling: parent requests in, child requests out after
//! `--route-delay`; venue responses in, parent responses out after `--back-delay`; truth
//! rows when a parent request is complete.
//!
//! Work that crosses from one connection to another always goes through the timer queue
//! (even with a zero delay: it is then due at once), so a handler only ever writes to the
//! connection it was called for and the event loop needs no aliasing tricks.
//!
//! `route` (parent requests to children) and `map_back` (venue responses to the parent)
//! are the two directions; this file holds the state, the timer queue, the write stamps
//! and the truth rows.

mod map_back;
mod route;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fixscope_core::fix::encode::FixEncoder;

use super::book::{Index, Order, Ref, Req, Slab};
use super::link::{Link, SendBuf};
use super::summary::RouterSummary;
use super::truth::RouterTruth;
use crate::args_router::IdMap;
use crate::delay::DelaySpec;
use crate::rng::Rng;
use crate::sending_time::UtcClock;
use crate::session::{Inbound, Session, Tx};
use map_back::VenueEvent;

pub struct Cfg {
    pub route_delay: DelaySpec,
    pub back_delay: DelaySpec,
    pub reject_rate: f64,
    pub slice: usize,
    pub id_map: IdMap,
}

const TIMER_ROUTE: u8 = 0;
const TIMER_BACK: u8 = 1;

/// A due event: route request `idx`, or map venue response `idx` (of `back`) back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timer {
    pub due: u64,
    seq: u64,
    kind: u8,
    idx: u32,
    gen: u32,
}

/// A write tag: request (index, low 16 bits of its generation) and slot (0: the request's
/// own response, k+1: the response caused by child k; on the venue side child k itself).
fn write_tag(r: Ref, slot: usize) -> u64 {
    (r.idx as u64) << 32 | ((r.gen & 0xffff) as u64) << 16 | (slot as u64 & 0xffff)
}

fn untag(tag: u64) -> (u32, u16, usize) {
    (
        (tag >> 32) as u32,
        (tag >> 16) as u16,
        (tag & 0xffff) as usize,
    )
}

/// The parts of a connection a message handler writes to (its receive buffer is busy
/// framing the message).
pub struct LinkParts<'a> {
    pub session: &'a mut Session,
    pub send: &'a mut SendBuf,
    pub closing: &'a mut bool,
}

/// Everything but the connections.
pub struct Engine {
    pub enc: FixEncoder,
    pub clock: UtcClock,
    cfg: Cfg,
    rng: Rng,
    reject_rng: Rng,
    orders: Slab<Order>,
    reqs: Slab<Req>,
    index: Index,
    pub timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    back: Vec<VenueEvent>,
    back_free: Vec<u32>,
    pub truth: Option<RouterTruth>,
    pub stats: RouterSummary,
    next_child: u64,
    next_order_id: u64,
    next_exec_id: u64,
    scratch: Vec<u8>,
}

impl Engine {
    pub fn new(cfg: Cfg, seed: u64, truth: Option<RouterTruth>, stats: RouterSummary) -> Self {
        Engine {
            enc: FixEncoder::new(),
            clock: UtcClock::new(),
            cfg,
            rng: Rng::new(seed),
            reject_rng: Rng::new(seed ^ 0x2e1e_c7ed_0dd5_0001),
            orders: Slab::with_capacity(1 << 14),
            reqs: Slab::with_capacity(1 << 14),
            index: Index::new(),
            timers: BinaryHeap::with_capacity(1 << 14),
            timer_seq: 0,
            back: Vec::with_capacity(1 << 12),
            back_free: Vec::new(),
            truth,
            stats,
            next_child: 1,
            next_order_id: 1,
            next_exec_id: 1,
            scratch: Vec::with_capacity(64),
        }
    }

    fn arm(&mut self, due: u64, kind: u8, idx: u32, gen: u32) {
        self.timer_seq += 1;
        self.timers.push(Reverse(Timer {
            due,
            seq: self.timer_seq,
            kind,
            idx,
            gen,
        }));
    }

    /// A framed message from client connection `conn`, read at `ts` (CLOCK_REALTIME).
    pub fn on_client_msg(
        &mut self,
        conn: Ref,
        link: &mut LinkParts<'_>,
        msg: &[u8],
        ts: u64,
        now: u64,
    ) {
        self.stats.messages_in += 1;
        let tx = Tx {
            enc: &mut self.enc,
            clock: &mut self.clock,
            out: link.send.out(),
        };
        match link.session.on_message(msg, now, tx) {
            Inbound::App(t) => self.on_parent(conn, link, msg, t, ts, now),
            // No replay store: the session answers ResendRequests with a GapFill itself.
            Inbound::Handled | Inbound::TestRequestDue(_) | Inbound::Resend { .. } => {}
            Inbound::LoggedOn => self.stats.logons += 1,
            Inbound::LoggedOut => {
                self.stats.logouts += 1;
                *link.closing = true;
            }
            Inbound::Disconnect(_) => {
                self.stats.protocol_errors += 1;
                *link.closing = true;
            }
        }
    }

    /// Timer `t` is due: returns the client connection it wrote to, if any.
    pub fn on_timer(
        &mut self,
        t: Timer,
        clients: &mut [Option<Link>],
        venue: &mut Link,
        now: u64,
    ) -> Option<u32> {
        let r = Ref {
            idx: t.idx,
            gen: t.gen,
        };
        if t.kind == TIMER_ROUTE {
            return self.route(r, clients, venue, now);
        }
        let ev = self.back[t.idx as usize];
        self.back_free.push(t.idx);
        self.map_back(ev, clients, now)
    }

    fn client(clients: &mut [Option<Link>], conn: Ref) -> Option<&mut Link> {
        match clients.get_mut(conn.idx as usize) {
            Some(Some(l)) if l.gen == conn.gen && !l.closing => Some(l),
            _ => None,
        }
    }

    /// A framed message from the venue, read at `ts` (CLOCK_REALTIME).
    pub fn on_venue_msg(&mut self, link: &mut LinkParts<'_>, msg: &[u8], ts: u64, now: u64) {
        let tx = Tx {
            enc: &mut self.enc,
            clock: &mut self.clock,
            out: link.send.out(),
        };
        match link.session.on_message(msg, now, tx) {
            Inbound::App(b"8") => self.on_venue_response(b'8', msg, ts, now),
            Inbound::App(b"9") => self.on_venue_response(b'9', msg, ts, now),
            Inbound::App(_) => self.stats.venue_other += 1,
            Inbound::Handled | Inbound::TestRequestDue(_) | Inbound::LoggedOn => {}
            Inbound::Resend { .. } => {}
            Inbound::LoggedOut | Inbound::Disconnect(_) => *link.closing = true,
        }
    }

    /// A tagged parent response was written at `ts`.
    pub fn on_client_sent(&mut self, tag: u64, ts: u64) {
        let (idx, gen16, slot) = untag(tag);
        let Some(r) = self.reqs.find_tagged(idx, gen16) else {
            return;
        };
        let Some(req) = self.reqs.get_mut(r) else {
            return;
        };
        if req.first_written_ns == 0 {
            req.first_written_ns = ts;
        }
        if slot > 0 {
            if let Some(c) = req.children.get_mut(slot - 1) {
                c.resp_written_ns = ts;
                c.resp_pending = false;
            }
        }
        if req.is_done() {
            let o = req.order;
            self.finish_req(r);
            self.maybe_free_order(o);
        }
    }

    /// A child request was written at `ts`.
    pub fn on_venue_sent(&mut self, tag: u64, ts: u64) {
        let (idx, gen16, slot) = untag(tag);
        let Some(r) = self.reqs.find_tagged(idx, gen16) else {
            return;
        };
        if let Some(c) = self
            .reqs
            .get_mut(r)
            .and_then(|q| q.children.get_mut(slot.wrapping_sub(1)))
        {
            c.written_ns = ts;
        }
    }

    /// Writes request `r`'s truth rows and forgets it.
    fn finish_req(&mut self, r: Ref) {
        let Some(req) = self.reqs.get(r) else { return };
        if let Some(w) = &mut self.truth {
            if w.write(req).is_err() {
                self.stats.truth_errors += 1;
            }
        }
        if let Some(order) = self.orders.get_mut(req.order) {
            order.open_reqs = order.open_reqs.saturating_sub(1);
        }
        self.reqs.release(r);
    }

    /// Forgets order `o` once all its legs are done and no request of it is in flight.
    fn maybe_free_order(&mut self, o: Ref) {
        let Some(order) = self.orders.get_mut(o) else {
            return;
        };
        if order.open_reqs > 0 || !order.all_done() {
            return;
        }
        for key in order.keys.drain(..) {
            self.index.parents.remove(&key);
            self.index.children.remove(&key);
        }
        self.orders.release(o);
    }

    /// End of the run: the rows of the requests still open.
    pub fn finish(&mut self) -> std::io::Result<()> {
        for r in self.reqs.live_refs() {
            self.stats.open_at_end += 1;
            self.finish_req(r);
        }
        if let Some(w) = &mut self.truth {
            w.flush()?;
            self.stats.truth_rows = w.rows;
        }
        Ok(())
    }
}
