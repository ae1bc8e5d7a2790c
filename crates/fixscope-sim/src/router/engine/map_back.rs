//! Venue responses in, parent responses out: the child each names, its truth (the first
//! response), and after `--back-delay` the parent's response, if it gets one (see the
//! router's module docs for what is forwarded and what swallowed).

use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

use super::{write_tag, Engine, TIMER_BACK};
use crate::router::book::{ChildRef, Ref, Req};
use crate::router::link::Link;
use crate::router::messages::{encode_cancel_reject, encode_er, ParentEr};
use crate::uint_field::parse_uint;

/// A venue response waiting for `--back-delay`: what the parent response needs of it.
#[derive(Clone, Copy)]
pub(super) struct VenueEvent {
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

impl Engine {
    pub(super) fn on_venue_response(&mut self, msg_type: u8, msg: &[u8], ts: u64, now: u64) {
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
    pub(super) fn map_back(
        &mut self,
        ev: VenueEvent,
        clients: &mut [Option<Link>],
        now: u64,
    ) -> Option<u32> {
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
                    status = if status == b'2' { b'1' } else { status };
                }
                // The parent's FIX version decides the code: 4.2 has partial fill 1 and
                // fill 2, later versions trade F (the venue may speak the other one).
                exec_type = match (link.session.is_fix42(), status) {
                    (true, b'2') => b'2',
                    (true, _) => b'1',
                    (false, _) => b'F',
                };
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
}
