//! The router's order handling: parent requests in, child requests out after
//! `--route-delay`; venue responses in, parent responses out after `--back-delay`; truth
//! rows when a parent request is complete.
//!
//! Work that crosses from one connection to another always goes through the timer queue
//! (even with a zero delay: it is then due at once), so a handler only ever writes to the
//! connection it was called for and the event loop needs no aliasing tricks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fixscope_core::fix::encode::{push_uint, FixEncoder};
use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

use super::book::{slice_qty, ChildRef, Index, Order, Ref, Req, Slab};
use super::link::{Link, SendBuf};
use super::messages::{encode_cancel_reject, encode_child, encode_er, ChildMsg, ParentEr};
use super::summary::RouterSummary;
use super::truth::RouterTruth;
use crate::args_router::IdMap;
use crate::delay::DelaySpec;
use crate::rng::Rng;
use crate::sending_time::UtcClock;
use crate::session::Session;
use crate::session::{Inbound, Tx};
use crate::uint_field::parse_uint;

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

/// A venue response waiting for `--back-delay`: what the parent response needs of it.
#[derive(Clone, Copy)]
struct VenueEvent {
    cref: ChildRef,
    /// The first response to its child request (the truth's `venue_first_*`).
    first_of_child: bool,
    msg_type: u8,
    exec_type: u8,
    ord_status: u8,
    last_qty: u64,
    last_px: [u8; 24],
    px_len: u8,
}

/// What a parent request says (slices of the message).
#[derive(Default)]
struct Request<'m> {
    clordid: &'m [u8],
    orig: &'m [u8],
    symbol: &'m [u8],
    side: &'m [u8],
    ord_type: &'m [u8],
    price: &'m [u8],
    qty: u64,
    seq: u64,
}

fn read_request(msg: &[u8]) -> Request<'_> {
    let mut r = Request::default();
    for (t, v) in Fields::new(msg) {
        match t {
            tag::CL_ORD_ID => r.clordid = v,
            tag::ORIG_CL_ORD_ID => r.orig = v,
            tag::MSG_SEQ_NUM => r.seq = parse_uint(v).unwrap_or(0),
            55 => r.symbol = v,
            54 => r.side = v,
            40 => r.ord_type = v,
            44 => r.price = v,
            38 => {
                let int = v.split(|&b| b == b'.').next().unwrap_or(v);
                r.qty = parse_uint(int).unwrap_or(0);
            }
            _ => {}
        }
    }
    r
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

    fn on_parent(
        &mut self,
        conn: Ref,
        link: &mut LinkParts<'_>,
        msg: &[u8],
        t: &[u8],
        ts: u64,
        now: u64,
    ) {
        let msg_type = match t {
            b"D" | b"F" | b"G" => t[0],
            _ => {
                let seq = read_request(msg).seq;
                let tx = Tx {
                    enc: &mut self.enc,
                    clock: &mut self.clock,
                    out: link.send.out(),
                };
                // 373=11: invalid MsgType.
                link.session.reject(tx, now, seq, 11, "unsupported MsgType");
                return;
            }
        };
        let m = read_request(msg);
        match msg_type {
            b'D' => self.stats.parents_d += 1,
            b'F' => self.stats.parents_f += 1,
            _ => self.stats.parents_g += 1,
        }
        let r = self.reqs.alloc();
        let delay = self.cfg.route_delay.sample(&mut self.rng);
        let drawn_reject =
            self.cfg.reject_rate > 0.0 && self.reject_rng.next_f64() < self.cfg.reject_rate;
        let Some(req) = self.reqs.get_mut(r) else {
            return;
        };
        req.conn = conn;
        req.session.extend_from_slice(link.session.target_comp_id());
        req.msg_type = msg_type;
        req.parent_id.extend_from_slice(m.clordid);
        req.orig_id.extend_from_slice(m.orig);
        req.seq = m.seq;
        req.read_ns = ts;
        req.qty = m.qty;
        req.price.extend_from_slice(m.price);
        if drawn_reject {
            req.rejected = true;
            req.reject_text = "rejected (--reject-rate)";
        } else if msg_type == b'D' {
            if m.clordid.is_empty() || m.qty == 0 || m.symbol.is_empty() {
                req.rejected = true;
                req.reject_text = "missing ClOrdID, Symbol or OrderQty";
            } else {
                let o = self.orders.alloc();
                if let Some(order) = self.orders.get_mut(o) {
                    order.conn = conn;
                    order.order_id = self.next_order_id;
                    self.next_order_id += 1;
                    order.parent_id.extend_from_slice(m.clordid);
                    order.symbol.extend_from_slice(m.symbol);
                    order.side.extend_from_slice(m.side);
                    order.ord_type.extend_from_slice(m.ord_type);
                    order.price.extend_from_slice(m.price);
                    order.qty = m.qty;
                    let n = self.cfg.slice.min(m.qty as usize).max(1);
                    order.split(n, m.qty);
                    order.open_reqs = 1;
                    let key = self.index.parent_key(conn, m.clordid);
                    self.index.parents.insert(key, o);
                    order.keys.push(key);
                    req.order = o;
                }
            }
        } else {
            let key = self.index.parent_key(conn, m.orig);
            match self.index.parents.get(&key).copied() {
                Some(o) => match self.orders.get_mut(o) {
                    Some(order) => {
                        order.open_reqs += 1;
                        req.order = o;
                    }
                    None => {
                        req.rejected = true;
                        req.reject_text = "unknown order";
                    }
                },
                None => {
                    req.rejected = true;
                    req.reject_text = "unknown order";
                }
            }
        }
        let mut due = now + delay;
        if let Some(order) = self.orders.get_mut(req.order) {
            due = due.max(order.last_route_due);
            order.last_route_due = due;
        }
        self.arm(due, TIMER_ROUTE, r.idx, r.gen);
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

    /// The route delay of request `r` is over: its children go to the venue, or the
    /// router's reject to the client.
    fn route(
        &mut self,
        r: Ref,
        clients: &mut [Option<Link>],
        venue: &mut Link,
        now: u64,
    ) -> Option<u32> {
        let req = self.reqs.get_mut(r)?;
        req.routed = true;
        if !req.rejected {
            match self.orders.get_mut(req.order) {
                Some(order) if req.msg_type == b'D' || !order.all_done() => {}
                _ => {
                    req.rejected = true;
                    req.reject_text = "no live child order";
                }
            }
        }
        if req.rejected {
            return self.reject(r, clients, now);
        }
        let order = self.orders.get_mut(req.order)?;
        let map = self.cfg.id_map;
        let n = order.nlegs;
        for k in 0..n {
            if req.msg_type != b'D' && order.legs[k].done {
                continue;
            }
            let qty = match req.msg_type {
                b'D' => order.legs[k].qty,
                b'G' if req.qty > 0 => slice_qty(req.qty, n, k),
                _ => order.legs[k].qty,
            };
            let slot = req.push_child(k, qty);
            let child = &mut req.children[slot];
            if map == IdMap::Same {
                child.id.extend_from_slice(&req.parent_id);
            } else {
                child.id.push(b'R');
                self.scratch.clear();
                push_uint(&mut self.scratch, self.next_child);
                self.next_child += 1;
                for _ in self.scratch.len()..9 {
                    child.id.push(b'0');
                }
                child.id.extend_from_slice(&self.scratch);
            }
            if req.msg_type == b'D' {
                order.legs[k].id.clear();
                order.legs[k].id.extend_from_slice(&child.id);
            }
            let key = self.index.child_key(&child.id);
            self.index.children.insert(
                key,
                ChildRef {
                    order: req.order,
                    leg: k,
                    req: r,
                    child: slot,
                },
            );
            order.keys.push(key);
            let price: &[u8] = if req.msg_type == b'G' && !req.price.is_empty() {
                &req.price
            } else {
                &order.price
            };
            let m = ChildMsg {
                msg_type: req.msg_type,
                id: &child.id,
                orig: &order.legs[k].id,
                parent_id: &req.parent_id,
                parent_sender: &req.session,
                parent_seq: req.seq,
                symbol: &order.symbol,
                side: &order.side,
                qty,
                ord_type: &order.ord_type,
                price,
            };
            encode_child(
                map,
                &mut venue.session,
                &mut self.enc,
                &mut self.clock,
                venue.send.out(),
                now,
                &m,
            );
            venue.send.stamp(write_tag(r, slot + 1));
            self.stats.children += 1;
        }
        None
    }

    /// The router's own reject of request `r` (35=8 150=8 for a D, 35=9 for an F/G).
    fn reject(&mut self, r: Ref, clients: &mut [Option<Link>], now: u64) -> Option<u32> {
        let req = self.reqs.get_mut(r)?;
        self.stats.rejected += 1;
        let link = Self::client(clients, req.conn)?;
        let out = &mut link.send;
        if req.msg_type == b'D' {
            let er = ParentEr {
                clordid: &req.parent_id,
                orig: b"",
                order_id: 0,
                exec_id: self.next_exec_id,
                exec_type: b'8',
                ord_status: b'8',
                symbol: b"",
                side: b"",
                qty: req.qty,
                cum: 0,
                price: b"",
                last_qty: 0,
                last_px: b"",
                text: req.reject_text,
            };
            self.next_exec_id += 1;
            encode_er(
                &mut link.session,
                &mut self.enc,
                &mut self.clock,
                out.out(),
                now,
                &er,
            );
            req.first_type = b'8';
        } else {
            encode_cancel_reject(
                &mut link.session,
                &mut self.enc,
                &mut self.clock,
                out.out(),
                now,
                &req.parent_id,
                &req.orig_id,
                req.msg_type,
                req.reject_text,
            );
            req.first_type = b'9';
        }
        out.stamp(write_tag(r, 0));
        Some(req.conn.idx)
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

    fn on_venue_response(&mut self, msg_type: u8, msg: &[u8], ts: u64, now: u64) {
        self.stats.venue_responses += 1;
        let mut ev = VenueEvent {
            cref: ChildRef {
                order: Ref::default(),
                leg: 0,
                req: Ref::default(),
                child: 0,
            },
            first_of_child: false,
            msg_type,
            exec_type: 0,
            ord_status: 0,
            last_qty: 0,
            last_px: [0; 24],
            px_len: 0,
        };
        let mut id: &[u8] = b"";
        for (t, v) in Fields::new(msg) {
            match t {
                tag::CL_ORD_ID => id = v,
                tag::EXEC_TYPE => ev.exec_type = v.first().copied().unwrap_or(0),
                tag::ORD_STATUS => ev.ord_status = v.first().copied().unwrap_or(0),
                32 => {
                    let int = v.split(|&b| b == b'.').next().unwrap_or(v);
                    ev.last_qty = parse_uint(int).unwrap_or(0);
                }
                31 => {
                    let n = v.len().min(ev.last_px.len());
                    ev.last_px[..n].copy_from_slice(&v[..n]);
                    ev.px_len = n as u8;
                }
                _ => {}
            }
        }
        let key = self.index.child_key(id);
        let Some(cref) = self.index.children.get(&key).copied() else {
            self.stats.venue_unmatched += 1;
            return;
        };
        ev.cref = cref;
        if let Some(req) = self.reqs.get_mut(cref.req) {
            if let Some(c) = req.children.get_mut(cref.child) {
                if c.venue_first_ns == 0 {
                    c.venue_first_ns = ts;
                    c.venue_first_type = if msg_type == b'9' { b'9' } else { ev.exec_type };
                    ev.first_of_child = true;
                }
            }
        }
        let mut due = now + self.cfg.back_delay.sample(&mut self.rng);
        if let Some(order) = self.orders.get_mut(cref.order) {
            due = due.max(order.last_back_due);
            order.last_back_due = due;
        }
        let slot = match self.back_free.pop() {
            Some(i) => {
                self.back[i as usize] = ev;
                i
            }
            None => {
                self.back.push(ev);
                (self.back.len() - 1) as u32
            }
        };
        self.arm(due, TIMER_BACK, slot, 0);
    }

    /// The back delay of a venue response is over: the parent's response, if it gets one.
    fn map_back(&mut self, ev: VenueEvent, clients: &mut [Option<Link>], now: u64) -> Option<u32> {
        let c = ev.cref;
        let wrote = self.forward(&ev, clients, now);
        if wrote.is_none() {
            self.stats.swallowed += 1;
        }
        if self.reqs.get(c.req).is_some_and(Req::is_done) {
            self.finish_req(c.req);
        }
        self.maybe_free_order(c.order);
        wrote
    }

    /// Updates the order's leg and sends the parent response `ev` calls for (fills always;
    /// anything else only as the request's first response).
    fn forward(&mut self, ev: &VenueEvent, clients: &mut [Option<Link>], now: u64) -> Option<u32> {
        let c = ev.cref;
        let order = self.orders.get_mut(c.order)?;
        let req = self.reqs.get_mut(c.req);
        let is_fill = ev.msg_type == b'8' && matches!(ev.exec_type, b'F' | b'1' | b'2');
        let leg = order.legs.get_mut(c.leg)?;
        if ev.msg_type == b'8' {
            match ev.exec_type {
                b'4' | b'8' | b'C' => leg.done = true,
                b'5' => {
                    if let Some(child) = req.as_ref().and_then(|q| q.children().get(c.child)) {
                        leg.id.clear();
                        leg.id.extend_from_slice(&child.id);
                        leg.qty = child.qty;
                    }
                }
                _ if is_fill => {
                    leg.cum += ev.last_qty;
                    leg.done |= ev.ord_status == b'2';
                }
                _ => {}
            }
        }
        let first_of_req = req.as_ref().is_some_and(|q| q.first_type == 0);
        if !is_fill && !first_of_req {
            return None;
        }
        let link = Self::client(clients, order.conn)?;
        let out = &mut link.send;
        let code = if ev.msg_type == b'9' {
            let q = req.as_deref()?;
            encode_cancel_reject(
                &mut link.session,
                &mut self.enc,
                &mut self.clock,
                out.out(),
                now,
                &q.parent_id,
                &q.orig_id,
                q.msg_type,
                "rejected by the venue",
            );
            b'9'
        } else {
            let (mut exec_type, mut status) = (ev.exec_type, ev.ord_status);
            if is_fill {
                order.cum += ev.last_qty;
                if !order.all_done() {
                    // Not the last child: a partial fill of the parent.
                    exec_type = if exec_type == b'2' { b'1' } else { exec_type };
                    status = if status == b'2' { b'1' } else { status };
                }
            }
            let replaced = ev.exec_type == b'5';
            let (clordid, orig): (&[u8], &[u8]) = match req.as_deref() {
                Some(q) if !is_fill => (&q.parent_id, &q.orig_id),
                _ => (&order.parent_id, b""),
            };
            if replaced {
                if let Some(q) = req.as_deref() {
                    if q.qty > 0 {
                        order.qty = q.qty;
                    }
                }
            }
            let er = ParentEr {
                clordid,
                orig,
                order_id: order.order_id,
                exec_id: self.next_exec_id,
                exec_type,
                ord_status: status,
                symbol: &order.symbol,
                side: &order.side,
                qty: order.qty,
                cum: order.cum,
                price: &order.price,
                last_qty: ev.last_qty,
                last_px: &ev.last_px[..ev.px_len as usize],
                text: "",
            };
            self.next_exec_id += 1;
            encode_er(
                &mut link.session,
                &mut self.enc,
                &mut self.clock,
                out.out(),
                now,
                &er,
            );
            if replaced {
                // The order goes by the G's ClOrdID from now on (fills, later F/G).
                if let Some(q) = req.as_deref() {
                    order.parent_id.clear();
                    order.parent_id.extend_from_slice(&q.parent_id);
                    let key = self.index.parent_key(order.conn, &q.parent_id);
                    self.index.parents.insert(key, c.order);
                    order.keys.push(key);
                }
            }
            exec_type
        };
        self.stats.forwarded += 1;
        if let Some(q) = req {
            let slot = if ev.first_of_child {
                if let Some(ch) = q.children.get_mut(c.child) {
                    ch.resp_pending = true;
                }
                c.child + 1
            } else {
                0
            };
            if ev.first_of_child || q.first_type == 0 {
                if q.first_type == 0 {
                    q.first_type = code;
                }
                out.stamp(write_tag(c.req, slot));
            }
        }
        Some(order.conn.idx)
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
