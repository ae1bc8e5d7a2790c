//! Message routing: every framed message through the session layer (which binds the
//! connection's session and judges replays); requests and responses to the correlator;
//! the order events it makes to the statistics (`crate::stats`: every consumer).

use super::share::ShardState;
use crate::breakdown::Breakdown;
use crate::consumer::OrderSink;
use crate::correlate::{is_response_type, Correlator, KeySpec, MessageFacts, RequestType, Stage};
use crate::fix::framing::{FramedMessage, FramingCounters, StreamFramer};
use crate::hops::{HopLinker, LegKind};
use crate::order::Latency;
use crate::points::PointJoiner;
use crate::reassembly::StreamEvent;
use crate::segment::{ByteTimes, ConnectionKey, Direction};
use crate::session::{Action, Binding, SessionLayer};
use crate::sink::{MessageEvent, MessageObserver};
use crate::slowest::OrderRef;
use crate::stats::Stats;

use super::forward::Forwarder;

/// What a reject says it rejected: a request's MsgSeqNum (45), or its key (379) and type
/// (372).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RejectedRequest<'m> {
    ref_seq: Option<u32>,
    ref_id: &'m [u8],
    ref_type: Option<RequestType>,
}

/// What a connection with TLS state is given: its reassembled stream, or its end (closed,
/// forgotten, the run's end), where a connection held for its key has a last look before
/// it is `no_key`.
pub(crate) enum TlsInput<'a> {
    Stream(StreamEvent<'a>),
    /// `--tls-uprobes`: an OpenSSL call's plaintext of this direction.
    Call(&'a crate::tls::TlsCall<'a>),
    /// The clock reached this (a connection held for its key: is its wait over?).
    Clock(u64),
    End,
}

/// Where framed messages go: the correlator, the statistics and the optional tracer.
pub(crate) struct MessageSink<'p> {
    pub(crate) framing: &'p mut FramingCounters,
    /// `--tls-keylog`: the secrets (`None`: no connection has TLS state).
    pub(crate) tls_keys: Option<&'p crate::tls::KeyStore>,
    pub(crate) tls_undecrypted: Option<&'p crate::tls::UndecryptedConnections>,
    pub(crate) tls: &'p mut crate::counters::TlsCounters,
    /// Connections held for their TLS key, by the end of their wait (live).
    pub(crate) held_for_key: &'p mut super::deadlines::Deadlines,
    /// Stage A of a two-stage run: messages go to stage B through this, not `router`.
    pub(crate) forward: Option<&'p mut Forwarder>,
    /// The protocol of each watched port (`--protocol`).
    pub(crate) protocols: &'p fixscope_protocol::ProtocolPorts,
    pub(crate) router: Router<'p>,
}

/// Where framed messages are routed (apart from the framing counters, which the framer
/// holds while it hands messages over).
pub(crate) struct Router<'p> {
    pub(crate) key: &'p KeySpec,
    pub(crate) correlator: &'p mut Correlator,
    pub(crate) stats: &'p mut Stats,
    pub(crate) observer: &'p mut Option<MessageObserver>,
    /// The key of the message observed (reused: no allocation per message).
    pub(crate) observed_key: &'p mut Vec<u8>,
    pub(crate) breakdown: &'p mut Option<Breakdown>,
    /// `--leg`: the hop linker.
    pub(crate) hops: &'p mut Option<HopLinker>,
    /// `--point`: the near point's orders joined with the far point's.
    pub(crate) points: &'p mut Option<PointJoiner>,
    pub(crate) layer: &'p mut SessionLayer,
    pub(crate) next_session: &'p mut u64,
    /// The source clock's offset to UTC (for `--records`' message rows).
    pub(crate) unix_offset_ns: i64,
    /// A worker of a sharded run: where the sessions it opens are noted for the merger.
    pub(crate) shard: &'p mut Option<ShardState>,
    /// Binary order protocols' logical sessions (`--protocol`).
    pub(crate) binary: &'p mut super::binary::BinaryRun,
}

impl MessageSink<'_> {
    /// A connection opened on `key`: its slot in a two-stage run's events (0 otherwise).
    pub(crate) fn opened(&mut self, key: ConnectionKey) -> u32 {
        match self.forward.as_deref_mut() {
            Some(f) => f.opened(key),
            None => 0,
        }
    }

    /// A connection's first payload, on watched port `port`: the state of a binary order
    /// protocol whose login it is, when `--protocol` names no protocol for the port and
    /// this pipeline reads it (`None`: FIX; a port named `fix` counts such a connection
    /// `unnamed_protocol_connections`). A run whose plan cannot (a worker of several,
    /// whose logical sessions would be split) notes it, to be read again on one pipeline;
    /// one measuring what binary sessions do not have (`--breakdown`, `--leg`, `--point`)
    /// counts it `unnamed_protocol_connections`, an alarm, as does that worker meanwhile.
    #[cold]
    pub(crate) fn recognise_protocol(
        &mut self,
        port: u16,
        first_payload: &[u8],
    ) -> Option<Box<super::binary::BinaryConnection>> {
        let named = self.protocols.named(port);
        if named.is_some_and(|p| p != fixscope_protocol::ProtocolName::Fix) {
            return None;
        }
        let (state, what) = super::binary::BinaryConnection::recognised(first_payload)?;
        if named.is_some() {
            // `--protocol PORTS=fix` on a binary session: said, not overruled.
            self.framing.unnamed_protocol_connections += 1;
            return None;
        }
        let r = &mut self.router;
        let served = r.breakdown.is_none() && r.hops.is_none() && r.points.is_none();
        let one_pipeline = self.forward.is_none() && r.shard.is_none();
        if served && one_pipeline {
            r.binary.note_recognised(what);
            return Some(state);
        }
        self.framing.unnamed_protocol_connections += 1;
        if served {
            r.binary.needs_one_pipeline.get_or_insert(what.describe());
        }
        None
    }

    /// Frames one reassembled stream event of one direction and routes its messages.
    #[inline]
    pub(crate) fn stream_event(
        &mut self,
        event: StreamEvent<'_>,
        framer: &mut StreamFramer,
        direction: Direction,
        binding: &mut Option<Binding>,
        conn: ConnectionKey,
        slot: u32,
    ) {
        match event {
            StreamEvent::Data { bytes, times, seq } => {
                self.frame(bytes, times, seq, framer, direction, binding, conn, slot)
            }
            StreamEvent::Gap { .. } => self.hole(framer, direction, binding, slot),
        }
    }

    /// One reassembled event of `direction`'s stream, the one way every caller sends it:
    /// through the connection's TLS decryption when it has TLS state (`--tls-keylog`),
    /// else straight to `direction`'s framer. `framers` are `direction`'s and the other's.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn half_stream_event(
        &mut self,
        event: StreamEvent<'_>,
        tls: &mut Option<Box<crate::tls::TlsConnection>>,
        binary: &mut Option<Box<super::binary::BinaryConnection>>,
        framers: [&mut StreamFramer; 2],
        direction: Direction,
        binding: &mut Option<Binding>,
        conn: ConnectionKey,
        slot: u32,
    ) {
        if let Some(b) = binary {
            let parts = super::binary::BinaryParts {
                framing: &mut *self.framing,
                correlator: &mut *self.router.correlator,
                stats: &mut *self.router.stats,
                next_session: &mut *self.router.next_session,
                run: &mut *self.router.binary,
                observer: &mut *self.router.observer,
                unix_offset_ns: self.router.unix_offset_ns,
            };
            return super::binary::stream_event(event, b, direction, conn, parts);
        }
        match tls {
            None => {
                let [this, _] = framers;
                self.stream_event(event, this, direction, binding, conn, slot)
            }
            Some(tls) => self.tls_stream_event(
                TlsInput::Stream(event),
                tls,
                framers,
                direction,
                binding,
                conn,
                slot,
            ),
        }
    }

    /// [`MessageSink::stream_event`] of a connection with TLS state (`--tls-keylog`): the
    /// bytes are decrypted first, and the plaintext framed at the time of the segment that
    /// completed its record. `framers` are `direction`'s and the other direction's (the
    /// client's records held until the ServerHello come out with the server's bytes).
    /// Plaintext has no TCP sequence numbers: its messages carry 0 (`--breakdown`, which
    /// places socket calls by them, is not available over TLS).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tls_stream_event(
        &mut self,
        input: TlsInput<'_>,
        tls: &mut crate::tls::TlsConnection,
        framers: [&mut StreamFramer; 2],
        direction: Direction,
        binding: &mut Option<Binding>,
        conn: ConnectionKey,
        slot: u32,
    ) {
        let [this, other] = framers;
        let Some(keys) = self.tls_keys else {
            if let TlsInput::Stream(event) = input {
                self.stream_event(event, this, direction, binding, conn, slot);
            }
            return;
        };
        // Copied out and back: the closure below borrows the sink.
        let mut counters = *self.tls;
        let decryptable = tls.undecryptable().is_none();
        let keyed = tls.suite().is_some();
        let held = tls.is_awaiting_key();
        let side = crate::tls::side_of(direction);
        let mut out = |out_side, plain: crate::tls::Plain<'_>| {
            let out_direction = crate::tls::direction_of(out_side);
            let framer = if out_side == side {
                &mut *this
            } else {
                &mut *other
            };
            match plain {
                // A record is readable, and its first byte timed, when it is complete.
                crate::tls::Plain::Data { bytes, ts_ns } => self.frame(
                    bytes,
                    ByteTimes::at(ts_ns),
                    0,
                    framer,
                    out_direction,
                    binding,
                    conn,
                    slot,
                ),
                crate::tls::Plain::Gap => self.hole(framer, out_direction, binding, slot),
            }
        };
        match input {
            // A record is complete when its last segment is readable.
            TlsInput::Stream(StreamEvent::Data { bytes, times, seq }) => tls.push_at(
                side,
                bytes,
                seq,
                times.readable_ns,
                keys,
                &mut counters,
                &mut out,
            ),
            TlsInput::Call(call) => tls.call(side, call, &mut counters, &mut out),
            TlsInput::Stream(StreamEvent::Gap { bytes }) => {
                tls.hole(side, bytes, &mut counters);
                out(side, crate::tls::Plain::Gap);
            }
            TlsInput::Clock(now_ns) => tls.tick(now_ns, keys, &mut counters, &mut out),
            TlsInput::End => tls.settle(keys, &mut counters, &mut out),
        }
        *self.tls = counters;
        if !held {
            if let Some(deadline_ns) = tls.key_wait_deadline_ns() {
                // Held from now on: the pipeline's clock ends the wait (`Deadlines`).
                self.held_for_key.insert(deadline_ns, conn);
            }
        }
        if let Some(info) = crate::tls::TlsSession::of(tls) {
            // The session table shows the connection's version and suite: its session
            // learns them once bound (one pipeline), stage B once they come (two stages).
            match self.forward.as_deref_mut() {
                Some(f) if !keyed => f.tls(slot, info),
                Some(_) => {}
                None => note_tls(self.router.stats, *binding, info),
            }
        }
        if let (true, Some(why), Some(log)) =
            (decryptable, tls.undecryptable(), self.tls_undecrypted)
        {
            log.note(conn, why);
        }
    }

    /// Frames in-order bytes of one direction and routes the messages they complete.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn frame(
        &mut self,
        bytes: &[u8],
        times: ByteTimes,
        seq: u32,
        framer: &mut StreamFramer,
        direction: Direction,
        binding: &mut Option<Binding>,
        conn: ConnectionKey,
        slot: u32,
    ) {
        match self.forward.as_deref_mut() {
            Some(f) => framer.push_times(bytes, times, seq, self.framing, |msg| {
                f.message(slot, direction, &msg)
            }),
            None => {
                let router = &mut self.router;
                framer.push_times(bytes, times, seq, self.framing, |msg| {
                    router.on_message(direction, binding, conn, &msg)
                })
            }
        }
    }

    /// Bytes of one direction are missing here (a capture hole; over TLS, also a record
    /// that did not verify): the message begun is cut, framing resyncs.
    fn hole(
        &mut self,
        framer: &mut StreamFramer,
        direction: Direction,
        binding: &mut Option<Binding>,
        slot: u32,
    ) {
        framer.gap(self.framing);
        if let Some(f) = self.forward.as_deref_mut() {
            f.hole(slot, direction);
            return;
        }
        // Messages lost in the hole were on the wire: the jump in MsgSeqNum after
        // it is no FIX sequence gap.
        if let Some(b) = *binding {
            self.router
                .layer
                .capture_hole(b, direction, self.router.correlator);
            if let Some(h) = self.router.hops.as_mut() {
                h.capture_hole(b.session, direction);
            }
        }
    }
}

impl Router<'_> {
    /// Routes one framed message: every message through the session layer (which binds
    /// the connection's session and judges replays); requests and responses to the
    /// correlator, the order events it makes to the statistics.
    pub(crate) fn on_message(
        &mut self,
        direction: Direction,
        binding: &mut Option<Binding>,
        conn: ConnectionKey,
        msg: &FramedMessage<'_>,
    ) {
        let facts = if self.correlator.keeps_records() {
            MessageFacts::extract_with::<true>(msg.bytes, self.key)
        } else {
            MessageFacts::extract(msg.bytes, self.key)
        };
        let b = self.bind(direction, binding, conn, msg, &facts);
        let action = self.layer.on_message(
            b,
            direction,
            &facts,
            msg,
            self.correlator,
            self.stats.session_book(),
        );
        let scope = self.layer.scope(b);
        let leg = self.hops.as_ref().and_then(|h| h.config().legs.of(&conn));
        match action {
            Action::Order => {}
            Action::Reject {
                ref_seq,
                ref_id,
                ref_type,
            } => {
                let named = RejectedRequest {
                    ref_seq,
                    ref_id,
                    ref_type,
                };
                self.on_reject(b.session, scope, leg, named, &facts, msg);
                return;
            }
            Action::Other if leg == Some(LegKind::Md) => {}
            Action::Replay | Action::Other => return,
        }
        if let (Some(leg), Some(h)) = (leg, self.hops.as_mut()) {
            h.on_message(leg, b.session, direction, &facts, msg, &mut *self.stats);
        }
        if action != Action::Order {
            return;
        }
        self.trace(direction, b.session, &facts, msg);
        match direction {
            Direction::Request => self.on_request(b.session, scope, leg, &facts, msg),
            Direction::Response => self.on_response(b.session, scope, leg, conn, &facts, msg),
        }
    }

    /// The message's session, bound at the connection's first message; a shard worker
    /// notes what the merger needs (the message, and a session it opened).
    #[inline]
    fn bind(
        &mut self,
        direction: Direction,
        binding: &mut Option<Binding>,
        conn: ConnectionKey,
        msg: &FramedMessage<'_>,
        facts: &MessageFacts<'_>,
    ) -> Binding {
        let opened_before = *self.next_session;
        let b = self.layer.bind(
            binding,
            facts,
            msg.bytes,
            direction,
            conn,
            self.next_session,
            self.stats.session_table_mut(),
        );
        if let Some(shard) = self.shard.as_mut() {
            shard.messages.push(super::share::RoutedMessage {
                segment_index: shard.segment_index,
                ts_ns: msg.last_byte_ts_ns,
                local_session: b.session,
            });
            if *self.next_session != opened_before {
                // The merger numbers sessions in the order the one pipeline opens them.
                shard.opened.push(super::share::OpenedSession {
                    local_id: b.session,
                    segment_index: shard.segment_index,
                    connection: conn,
                    identity: (!b.anonymous)
                        .then(|| crate::session::identity(facts, msg.bytes, direction))
                        .flatten(),
                });
            }
        }
        b
    }

    /// A session-level or business reject answers the request it names (by MsgSeqNum or
    /// by key): its latencies are recorded like a response's.
    #[allow(clippy::too_many_arguments)]
    fn on_reject(
        &mut self,
        session: u64,
        scope: u64,
        leg: Option<LegKind>,
        named: RejectedRequest<'_>,
        facts: &MessageFacts<'_>,
        msg: &FramedMessage<'_>,
    ) {
        let ts_ns = msg.first_byte_ts_ns;
        let stats = &mut *self.stats;
        let points = &mut *self.points;
        let record = |mut latency: Latency, order_key: &[u8]| {
            latency.session = session;
            let order = OrderRef {
                key: order_key,
                response_msg_type: facts.msg_type,
                exec_type: None,
                ord_status: None,
                response_ts_ns: ts_ns,
                breakdown: None,
            };
            record_with_extras(stats, leg, points, latency, &order)
        };
        // By MsgSeqNum the rejected message is exact; by key only when RefMsgType names
        // the request's type (a poll rejected under the order's ClOrdID is no answer).
        match (named.ref_seq, named.ref_type) {
            (Some(seq), _) => self.correlator.answer_by_msg_seq(scope, seq, ts_ns, record),
            (None, Some(ref_type)) if !named.ref_id.is_empty() => {
                // A hub's reject names its firm's order (128 joins the key).
                let mut buf = Vec::new();
                let key = facts.key_of(named.ref_id, &mut buf);
                self.correlator
                    .answer_by_key(scope, key, ref_type, ts_ns, record)
            }
            _ => false,
        };
    }

    /// `--trace`: every request and response, as the correlator sees it.
    #[inline]
    fn trace(
        &mut self,
        direction: Direction,
        session: u64,
        facts: &MessageFacts<'_>,
        msg: &FramedMessage<'_>,
    ) {
        let Some(observe) = self.observer else {
            return;
        };
        let correlated = match direction {
            Direction::Request => RequestType::from_msg_type(facts.msg_type).is_some(),
            Direction::Response => is_response_type(facts.msg_type),
        };
        if correlated {
            // Borrowed from the message for a one-tag key, as the correlator takes it.
            let key = facts.key(self.key, self.observed_key).unwrap_or_default();
            observe(&MessageEvent {
                ts_ns: match direction {
                    Direction::Request => msg.last_byte_ts_ns,
                    Direction::Response => msg.first_byte_ts_ns,
                },
                session,
                direction,
                msg_type: facts.msg_type,
                key,
                unix_offset_ns: self.unix_offset_ns,
                sender_comp_id: facts.sender_comp_id,
                target_comp_id: facts.target_comp_id,
                msg_seq_num: facts.msg_seq_num,
                poss_dup: facts.poss_dup,
            });
        }
    }

    /// A request (D/F/G/AB; each order of a list E or side of a cross s) starts an order:
    /// counted for its session, given its `--by` value ids, tracked by the correlator.
    #[inline]
    fn on_request(
        &mut self,
        session: u64,
        scope: u64,
        leg: Option<LegKind>,
        facts: &MessageFacts<'_>,
        msg: &FramedMessage<'_>,
    ) {
        let Some(request_type) = RequestType::from_msg_type(facts.msg_type) else {
            return;
        };
        match request_type.has_order_group() {
            // Each order its own request under its ClOrdID, at the message's time: split
            // only when ClOrdID alone is the key (with another key, the message is one
            // request under the values the one-pass reader found: its first ones).
            Some(first) if self.key.is_cl_ord_id() => {
                self.group_requests(session, scope, leg, request_type, first, facts, msg)
            }
            _ => self.one_request(session, scope, leg, request_type, facts, msg),
        }
    }

    /// The orders of a list or a cross, each a request (read whole: rare messages).
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn group_requests(
        &mut self,
        session: u64,
        scope: u64,
        leg: Option<LegKind>,
        request_type: RequestType,
        first: u32,
        facts: &MessageFacts<'_>,
        msg: &FramedMessage<'_>,
    ) {
        let mut orders = Vec::new();
        crate::correlate::group_orders(msg.bytes, first, &mut orders);
        for order in &orders {
            let facts = facts.for_order(order);
            self.one_request(session, scope, leg, request_type, &facts, msg);
        }
    }

    /// One order's request.
    #[inline]
    fn one_request(
        &mut self,
        session: u64,
        scope: u64,
        leg: Option<LegKind>,
        request_type: RequestType,
        facts: &MessageFacts<'_>,
        msg: &FramedMessage<'_>,
    ) {
        if let Some(s) = self.stats.session_mut(session) {
            s.requests += 1;
        }
        let groups = match self.stats.by_mut() {
            Some(by) => {
                let values = by.spec.values(msg.bytes);
                by.request(&values)
            }
            None => crate::order::NO_GROUPS,
        };
        let Router {
            correlator,
            stats,
            points,
            ..
        } = self;
        if let Some(book) = correlator.records_mut() {
            book.fields.set(facts);
        }
        correlator.on_request_grouped(
            scope,
            request_type,
            facts,
            msg.last_byte_ts_ns,
            msg.last_byte_seq,
            groups,
            // Responses the capture showed before this request, stamped after it (a tap's
            // hardware stamps read in the host's order): their latencies now. They carry
            // no breakdown (pcap and the tap have none) and the request's `--by` values.
            |mut latency, key, replay| {
                latency.session = session;
                let msg_type = [replay.msg_type];
                let order = OrderRef {
                    key,
                    response_msg_type: &msg_type,
                    exec_type: replay.exec_type,
                    ord_status: replay.ord_status,
                    response_ts_ns: replay.ts_ns,
                    breakdown: None,
                };
                record_with_extras(stats, leg, points, latency, &order)
            },
        );
    }

    /// A response (8/9) answers its order: each latency it makes (with the order's
    /// breakdown and `--by` values) goes to the consumers as an order event.
    #[inline]
    fn on_response(
        &mut self,
        session: u64,
        scope: u64,
        leg: Option<LegKind>,
        conn: ConnectionKey,
        facts: &MessageFacts<'_>,
        msg: &FramedMessage<'_>,
    ) {
        if !is_response_type(facts.msg_type) {
            return;
        }
        let Router {
            correlator,
            stats,
            breakdown,
            points,
            ..
        } = self;
        if let Some(s) = stats.session_mut(session) {
            s.responses += 1;
        }
        let ts_ns = msg.first_byte_ts_ns;
        // With `--breakdown`, the order's breakdown (resolved at its first response) goes
        // with every slow-order entry this response makes.
        let mut order_breakdown = None;
        // `--by` values the request lacked come from the response (read once).
        let mut response_values = None;
        correlator.on_response(scope, facts, ts_ns, |mut latency, key| {
            latency.session = session;
            if let Some(by) = stats.by_mut() {
                let n = by.spec.fields.len();
                if crate::group::GroupStats::needs_response_values(&latency.groups, n) {
                    let values = *response_values.get_or_insert_with(|| by.spec.values(msg.bytes));
                    by.complete(&mut latency.groups, &values);
                }
            }
            let mut order = OrderRef {
                key,
                response_msg_type: facts.msg_type,
                exec_type: facts.exec_type,
                ord_status: facts.ord_status,
                response_ts_ns: ts_ns,
                breakdown: None,
            };
            if let Some(b) = breakdown.as_mut() {
                if latency.stage == Stage::FirstResponse {
                    order_breakdown = Some(
                        b.on_first_response(
                            conn,
                            &latency,
                            msg.first_byte_seq,
                            &order,
                            &mut **stats,
                        )
                        .unwrap_or_default(),
                    );
                }
                order.breakdown = order_breakdown;
            }
            record_with_extras(stats, leg, points, latency, &order)
        });
    }
}

/// The TLS version and suite of a bound connection's session (`--tls-keylog`): the
/// session table shows them. The connection it was bound on last gives them.
#[inline]
pub(crate) fn note_tls(stats: &mut Stats, binding: Option<Binding>, info: crate::tls::TlsSession) {
    if let Some(s) = binding.and_then(|b| stats.session_mut(b.session)) {
        if s.tls != Some(info) {
            s.tls = Some(info);
        }
    }
}

/// Records an order's latency; with `--leg`, its first response is also a parent's
/// `client_rtt` (up leg) or a child's `venue_rtt` (down leg): every order of a leg, linked
/// or not, by the correlator's own rules (replays, holes, rejects). With `--point`, its
/// first response joins the far point's order (the two-point stages).
#[inline]
fn record_with_extras(
    stats: &mut Stats,
    leg: Option<LegKind>,
    points: &mut Option<PointJoiner>,
    latency: Latency,
    order: &OrderRef<'_>,
) {
    stats.record_order(latency, order);
    if latency.stage != Stage::FirstResponse {
        return;
    }
    if leg.is_some() {
        record_leg_rtt(stats, leg, latency, order);
    }
    if let Some(p) = points.as_mut() {
        join_points(stats, p, latency, order);
    }
}

/// Out of line, like [`record_leg_rtt`].
#[inline(never)]
fn join_points(
    stats: &mut Stats,
    points: &mut PointJoiner,
    latency: Latency,
    order: &OrderRef<'_>,
) {
    points.identify(&latency, order, stats.session_names(latency.session));
    points.on_first_response(latency, order, stats);
}

/// Out of line: a run without `--leg` keeps the correlator's closures as small as before.
#[inline(never)]
fn record_leg_rtt(stats: &mut Stats, leg: Option<LegKind>, latency: Latency, order: &OrderRef<'_>) {
    let stage = match leg {
        Some(LegKind::Up) => Stage::ClientRtt,
        Some(LegKind::Down) => Stage::VenueRtt,
        _ => return,
    };
    stats.record_order(Latency { stage, ..latency }, order);
}
