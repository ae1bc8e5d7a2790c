//! Responses from the exchange matched to the requests a session tracks: latencies of the
//! first response, the ack and the first fill (from the schedule and from the write), the
//! end of each request's lifecycle, and its client truth record.

use fixscope_core::fix::message::Fields;
use fixscope_core::fix::tag;

use super::conn::{Order, Sess};
use super::orders::{parse_clordid, push_clordid};
use super::{Ctx, STAGE_ACK, STAGE_FILL, STAGE_FIRST};
use crate::session::{Inbound, Tx};

impl Ctx {
    /// Marks a request complete and writes its client truth record.
    pub(super) fn complete(&mut self, s: &mut Sess, num: u64) {
        let Some(o) = s.slot(num) else { return };
        if o.done {
            return;
        }
        o.done = true;
        let o = *o;
        s.outstanding = s.outstanding.saturating_sub(1);
        self.c.completed += 1;
        self.write_truth(s, &o);
    }

    pub(super) fn write_truth(&mut self, s: &Sess, o: &Order) {
        let Some(w) = &mut self.truth else { return };
        self.id.clear();
        push_clordid(&mut self.id, &s.prefix, s.width, o.num);
        let nz = |v: u64| (v != 0).then_some(v);
        let nums = [
            Some(o.sched_ns),
            nz(o.send_ns),
            nz(o.first_ns),
            nz(o.ack_ns),
            nz(o.fill_ns),
        ];
        // A failing truth file must not stop the load; the error shows up at flush.
        let _ = w.write([&self.id, s.local.as_bytes(), &[o.kind]], &nums);
    }

    /// A framed message from the exchange arrived at `now`.
    pub(super) fn on_message(&mut self, s: &mut Sess, msg: &[u8], now: u64) {
        let tx = Tx {
            enc: &mut self.enc,
            clock: &mut self.clock,
            out: s.out.buf(),
        };
        match s.session.on_message(msg, now, tx) {
            Inbound::App(b"3") => self.on_session_reject(s, msg, now),
            Inbound::App(t) => self.on_response(s, msg, t, now),
            Inbound::Handled | Inbound::LoggedOn | Inbound::TestRequestDue(_) => {}
            Inbound::Resend { begin, end } => {
                s.session
                    .resend(&mut self.enc, &mut self.clock, &mut s.out, now, begin, end);
            }
            Inbound::LoggedOut | Inbound::Disconnect(_) => s.closing = true,
        }
    }

    /// A session Reject answers the outstanding request whose MsgSeqNum it names (45).
    fn on_session_reject(&mut self, s: &mut Sess, msg: &[u8], now: u64) {
        let ref_seq = Fields::new(msg)
            .find(|&(t, _)| t == 45)
            .and_then(|(_, v)| crate::uint_field::parse_uint(v));
        let found = ref_seq.and_then(|seq| {
            s.ring
                .iter()
                .find(|o| o.num != 0 && !o.done && o.seq == seq)
                .map(|o| o.num)
        });
        match found {
            Some(num) => self.answered_by_reject(s, num, now),
            None => self.c.unmatched += 1,
        }
    }

    /// Request `num` was answered by a reject that ends it (35=3 or 35=j).
    fn answered_by_reject(&mut self, s: &mut Sess, num: u64, now: u64) {
        let Some(o) = s.slot(num) else { return };
        if o.first_ns == 0 {
            o.first_ns = now;
            let sched = o.sched_ns.min(now);
            let send = if o.send_ns == 0 {
                now
            } else {
                o.send_ns.min(now)
            };
            self.lat.record(STAGE_FIRST, now - sched, now - send);
        }
        self.c.rejects += 1;
        self.complete(s, num);
    }

    /// An application message from the exchange arrived at `now`.
    fn on_response(&mut self, s: &mut Sess, msg: &[u8], msg_type: &[u8], now: u64) {
        let (mut clordid, mut orig, mut exec_type, mut status): (&[u8], &[u8], &[u8], &[u8]) =
            (b"", b"", b"", b"");
        for (t, v) in Fields::new(msg) {
            match t {
                tag::CL_ORD_ID => clordid = v,
                tag::ORIG_CL_ORD_ID => orig = v,
                tag::EXEC_TYPE => exec_type = v,
                tag::ORD_STATUS => status = v,
                _ => {}
            }
            // Our exchange puts 11 and 41 before 150/39 (35=9 has no 150): stop early.
            if !clordid.is_empty()
                && !status.is_empty()
                && (!exec_type.is_empty() || msg_type == b"9")
            {
                break;
            }
        }
        if msg_type == b"j" {
            // BusinessMessageReject: the request's ClOrdID is its BusinessRejectRefID.
            let id = Fields::new(msg)
                .find(|&(t, _)| t == 379)
                .map_or(&b""[..], |(_, v)| v);
            match parse_clordid(&s.prefix, id) {
                Some(num) if s.slot(num).is_some() => self.answered_by_reject(s, num, now),
                _ => self.c.unmatched += 1,
            }
            return;
        }
        let num = parse_clordid(&s.prefix, clordid).unwrap_or(0);
        let orig_num = parse_clordid(&s.prefix, orig);
        let Some(o) = s.slot(num) else {
            self.c.unmatched += 1;
            return;
        };
        let sched = o.sched_ns.min(now);
        let send = if o.send_ns == 0 {
            now
        } else {
            o.send_ns.min(now)
        };
        if o.first_ns == 0 {
            o.first_ns = now;
            self.lat.record(STAGE_FIRST, now - sched, now - send);
        }
        if msg_type == b"9" {
            self.c.cancel_rejects += 1;
            self.complete(s, num);
            return;
        }
        if msg_type != b"8" {
            return;
        }
        let is_ack = matches!(exec_type, b"0" | b"4" | b"5");
        let is_fill = matches!(exec_type, b"F" | b"1" | b"2");
        if is_ack && o.ack_ns == 0 {
            o.ack_ns = now;
            self.c.acks += 1;
            self.lat.record(STAGE_ACK, now - sched, now - send);
        }
        if is_fill && o.fill_ns == 0 {
            o.fill_ns = now;
            self.c.fills += 1;
            self.lat.record(STAGE_FILL, now - sched, now - send);
        }
        match exec_type {
            b"0" | b"5" => {
                if let (b"5", Some(on)) = (exec_type, orig_num) {
                    self.complete(s, on);
                }
                if self.no_fill {
                    self.complete(s, num);
                } else {
                    s.remember_live(num);
                }
            }
            b"4" => {
                if let Some(on) = orig_num {
                    self.complete(s, on);
                }
                self.complete(s, num);
            }
            b"8" => {
                self.c.rejects += 1;
                self.complete(s, num);
            }
            _ if is_fill => {
                if status == b"2" {
                    self.c.filled_orders += 1;
                    self.complete(s, num);
                }
            }
            _ => {
                if matches!(status, b"2" | b"4" | b"8" | b"C") {
                    self.complete(s, num);
                }
            }
        }
    }
}
