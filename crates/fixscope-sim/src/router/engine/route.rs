//! Parent requests in, child requests out: what a request says, the order it creates or
//! acts on, and after `--route-delay` its children at the venue or the router's own reject.

use fixscope_core::fix::encode::push_uint;
use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

use super::{write_tag, Engine, LinkParts, TIMER_ROUTE};
use crate::args_router::IdMap;
use crate::router::book::{slice_qty, ChildRef, Ref};
use crate::router::link::Link;
use crate::router::messages::{encode_cancel_reject, encode_child, encode_er, ChildMsg, ParentEr};
use crate::session::Tx;
use crate::uint_field::parse_uint;

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

impl Engine {
    pub(super) fn on_parent(
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

    /// The route delay of request `r` is over: its children go to the venue, or the
    /// router's reject to the client.
    pub(super) fn route(
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
}
