//! The correlator's entry for a protocol on the seam's order half
//! ([`fixscope_protocol::OrderEvent`]): the same tracking and answering as FIX's entry
//! points, from the key and the [`ResponseKind`] the protocol gave instead of FIX's facts.
//! A resend (`OrderEvent::Request { resend: true }`) is the caller's to drop, as FIX's
//! PossResend is: it is no new order.

use super::*;
use fixscope_protocol::{ResponseCode, ResponseKind};

impl Correlator {
    /// A request of `request_type` under `key` on `session` (its scope), seen at `ts_ns`
    /// (the segment that completed it), its last byte at TCP sequence `last_byte_seq`,
    /// `msg_seq` the protocol's sequence number of it (0: none). Responses of its order
    /// that the capture showed first, stamped after it, answer it now (`on_replayed`).
    #[allow(clippy::too_many_arguments)]
    pub fn on_order_request<F>(
        &mut self,
        session: u64,
        request_type: RequestType,
        key: &[u8],
        msg_seq: u32,
        ts_ns: u64,
        last_byte_seq: u32,
        on_replayed: F,
    ) where
        F: FnMut(Latency, &[u8], &Replay),
    {
        self.counters.requests += 1;
        if key.is_empty() {
            return self.request_without_key(session, request_type, ts_ns, msg_seq);
        }
        let request = NewRequest {
            session,
            key,
            hash: self.table.hash(session, key),
            ts_ns,
            last_byte_seq,
            request_type,
            msg_seq,
        };
        self.request_of_key(&request, on_replayed);
    }

    /// [`Correlator::on_order_request`] with the order's `--by` value ids (every latency
    /// of the order carries them).
    #[allow(clippy::too_many_arguments)]
    pub fn on_order_request_grouped<F>(
        &mut self,
        session: u64,
        request_type: RequestType,
        key: &[u8],
        msg_seq: u32,
        ts_ns: u64,
        last_byte_seq: u32,
        groups: fixscope_model::order::Groups,
        on_replayed: F,
    ) where
        F: FnMut(Latency, &[u8], &Replay),
    {
        self.groups = groups;
        self.on_order_request(
            session,
            request_type,
            key,
            msg_seq,
            ts_ns,
            last_byte_seq,
            on_replayed,
        );
        self.groups = fixscope_model::order::NO_GROUPS;
    }

    /// A response of `kind` to the request under `key` on `session`, seen at `ts_ns` (the
    /// segment carrying its first byte); `ends` names another order it ends (the one a
    /// replace replaced; empty: none), `code` is the protocol's own for it. The latencies
    /// it completes go to `on_latency` with the order's key.
    #[allow(clippy::too_many_arguments)]
    pub fn on_order_response<F>(
        &mut self,
        session: u64,
        key: &[u8],
        kind: ResponseKind,
        ends: &[u8],
        code: ResponseCode,
        ts_ns: u64,
        mut on_latency: F,
    ) where
        F: FnMut(Latency, &[u8]),
    {
        self.response_seen(session, ts_ns);
        if key.is_empty() {
            self.counters.missing_key += 1;
            return;
        }
        let hash = self.table.hash(session, key);
        let found = self.find_answered(session, key, hash);
        if kind.unsolicited {
            return self.unsolicited_report(found, kind);
        }
        let Some(slot) = found else {
            let replay = Replay {
                ts_ns,
                kind,
                msg_type: code.as_bytes().first().copied().unwrap_or(b'?'),
                exec_type: None,
                ord_status: None,
            };
            let unclaimed = self.early.hold(hash, session, key, replay);
            return self.count_unclaimed(unclaimed);
        };
        self.answer(slot, session, key, ts_ns, kind, &mut on_latency);
        if kind.ends_original && !ends.is_empty() {
            self.end_named(session, ends, slot);
        }
    }

    /// The order under `key` is over (a replace or cancel confirmed): no longer tracked,
    /// unless it never had a response of its own (its answer may still come).
    fn end_named(&mut self, session: u64, key: &[u8], answered_slot: u32) {
        let hash = self.table.hash(session, key);
        if let Some(slot) = self.table.find(session, key, hash) {
            if slot != answered_slot && self.table.get(slot).responded {
                self.release(slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlate::REORDER_WINDOW_NS;
    use fixscope_fix::encode::test_message as msg;

    fn kind(ack: bool, fill: bool, terminal: bool) -> ResponseKind {
        ResponseKind {
            ack,
            fill,
            terminal,
            ..ResponseKind::default()
        }
    }

    /// (request time, ExecType, OrdStatus, response time) of one response of an order.
    type Step = (u64, &'static str, &'static str, u64);

    /// The same orders through FIX's facts and through neutral events: the same
    /// latencies, stage by stage, and the same counters.
    #[test]
    fn neutral_events_correlate_as_fix_facts_do() {
        let flows: [(&str, &[Step]); 3] = [
            // (request ts, then responses: ts, ExecType, OrdStatus)
            (
                "A",
                &[
                    (100, "0", "0", 140),
                    (100, "F", "1", 300),
                    (100, "F", "2", 450),
                ],
            ),
            ("B", &[(1_000, "8", "8", 1_020)]),
            ("C", &[(2_000, "0", "0", 2_500)]),
        ];
        let mut fix = Correlator::new(KeySpec::default(), CorrelatorLimits::default());
        let mut neutral = Correlator::new(KeySpec::default(), CorrelatorLimits::default());
        let (mut fix_out, mut neutral_out) = (Vec::new(), Vec::new());
        for (id, responses) in flows {
            let order = msg(&[(35, "D"), (49, "C"), (56, "X"), (11, id)]);
            let f = MessageFacts::extract(&order, &KeySpec::default());
            let t0 = responses[0].0;
            fix.on_request(1, RequestType::NewOrder, &f, t0, |l, _, _| fix_out.push(l));
            neutral.on_order_request(
                1,
                RequestType::NewOrder,
                id.as_bytes(),
                0,
                t0,
                0,
                |l, _, _| neutral_out.push(l),
            );
            for &(_, exec, status, ts) in responses {
                let report = msg(&[
                    (35, "8"),
                    (49, "X"),
                    (56, "C"),
                    (11, id),
                    (150, exec),
                    (39, status),
                ]);
                let f = MessageFacts::extract(&report, &KeySpec::default());
                fix.on_response(1, &f, ts, |l, _| fix_out.push(l));
                let k = match (exec, status) {
                    ("0", _) => kind(true, false, false),
                    ("F", "2") => kind(false, true, true),
                    ("F", _) => kind(false, true, false),
                    _ => ResponseKind {
                        reject: true,
                        ..kind(true, false, true)
                    },
                };
                neutral.on_order_response(
                    1,
                    id.as_bytes(),
                    k,
                    b"",
                    ResponseCode::of(b"E"),
                    ts,
                    |l, _| neutral_out.push(l),
                );
            }
        }
        let stages = |v: &[Latency]| v.iter().map(|l| (l.stage, l.ns)).collect::<Vec<_>>();
        assert_eq!(stages(&neutral_out), stages(&fix_out));
        assert!(!fix_out.is_empty());
        assert_eq!(neutral.counters, fix.counters);
        assert_eq!(neutral.pending(), fix.pending());
        assert_eq!(neutral.pending(), 1, "C is still working");
    }

    /// A replace confirmed ends the order it replaced (`ends`); an unsolicited report
    /// answers nothing; a response with no request waits in the reorder window and then is
    /// unmatched; an empty key is `missing_key`.
    #[test]
    fn replaces_unsolicited_reports_and_strays() {
        let mut c = Correlator::new(KeySpec::default(), CorrelatorLimits::default());
        let mut out = Vec::new();
        c.on_order_request(1, RequestType::NewOrder, b"T1", 1, 100, 0, |l, _, _| {
            out.push(l)
        });
        c.on_order_response(
            1,
            b"T1",
            kind(true, false, false),
            b"",
            ResponseCode::of(b"A"),
            110,
            |l, _| out.push(l),
        );
        c.on_order_request(1, RequestType::Replace, b"T2", 2, 200, 0, |l, _, _| {
            out.push(l)
        });
        let replaced = ResponseKind {
            ends_original: true,
            ..kind(true, false, false)
        };
        c.on_order_response(
            1,
            b"T2",
            replaced,
            b"T1",
            ResponseCode::of(b"U"),
            230,
            |l, _| out.push(l),
        );
        assert_eq!(c.pending(), 1, "T1 ended by its replacement");
        let bust = ResponseKind {
            unsolicited: true,
            ..ResponseKind::default()
        };
        c.on_order_response(1, b"T2", bust, b"", ResponseCode::of(b"B"), 240, |l, _| {
            out.push(l)
        });
        assert_eq!(c.counters.unsolicited_reports, 1);
        c.on_order_response(
            1,
            b"T9",
            kind(true, false, false),
            b"",
            ResponseCode::of(b"A"),
            250,
            |l, _| out.push(l),
        );
        c.expire(250 + REORDER_WINDOW_NS + 1);
        assert_eq!(c.counters.unmatched_responses, 1);
        c.on_order_request(1, RequestType::NewOrder, b"", 3, 300, 0, |l, _, _| {
            out.push(l)
        });
        assert_eq!(
            (c.counters.missing_key, c.counters.untracked_requests),
            (1, 1)
        );
        assert_eq!(c.counters.matched, 2);
        let first: Vec<u64> = out
            .iter()
            .filter(|l| l.stage == Stage::FirstResponse)
            .map(|l| l.ns)
            .collect();
        assert_eq!(first, vec![10, 30]);
    }
}
