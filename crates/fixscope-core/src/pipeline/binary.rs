//! Order sessions in a binary protocol (`--protocol PORTS=ouch42|ouch50`): a connection
//! whose watched port is named for one is framed by its protocol's framer (SoupBinTCP),
//! its packets read by the protocol's order layer (`fixscope-ouch`: logical sessions,
//! replays, resends, keyless cancels) into the seam's order events, and those answered
//! by the correlator's protocol-neutral entry points — the same tracking, stages and
//! counters as FIX, on the same timing rules (a request at the segment that completes
//! it, a response at the one carrying its first byte).
//!
//! One pipeline runs them (the pcap plans pick it; live and tap have one): a logical
//! session's state spans its connections, which shards or a second stage would split.

use hashbrown::HashMap;

use fixscope_ouch::orders::{OuchConnection, SessionBook, Version};
use fixscope_ouch::session::{SessionFact, SessionName};
use fixscope_ouch::soupbin::{Side, SoupBinFramer};
use fixscope_protocol::{FramedMessage, Framer, OrderEvent, ProtocolName};

use crate::consumer::OrderSink;
use crate::correlate::{scope_of, Correlator};
use crate::counters::OuchCounters;
use crate::reassembly::StreamEvent;
use crate::segment::{ConnectionKey, Direction};
use crate::slowest::OrderRef;
use crate::stats::Stats;
use fixscope_protocol::FramingCounters;

/// One connection of a binary order protocol: a framer per direction and the protocol's
/// order layer.
pub(crate) struct BinaryConnection {
    /// The request (client → host) and response (host → client) directions' framers.
    framers: [SoupBinFramer; 2],
    ouch: OuchConnection,
    /// The session table's id of its logical session, once logged in.
    session: Option<u64>,
}

impl BinaryConnection {
    /// The state of a connection of `protocol` (`None`: FIX, framed as FIX).
    pub(crate) fn of(protocol: ProtocolName) -> Option<Box<Self>> {
        let version = match protocol {
            ProtocolName::Ouch42 => Version::Ouch42,
            ProtocolName::Ouch50 => Version::Ouch50,
            ProtocolName::Fix | ProtocolName::Ilink3 => return None,
        };
        Some(Box::new(BinaryConnection {
            framers: [SoupBinFramer::new(), SoupBinFramer::new()],
            ouch: OuchConnection::new(version),
            session: None,
        }))
    }

    /// What this connection's order layer counted.
    pub(crate) fn counters(&self) -> OuchCounters {
        *self.ouch.counters()
    }
}

/// What a run keeps of its binary sessions beyond their connections.
#[derive(Default)]
pub(crate) struct BinaryRun {
    /// The logical sessions (replays, resends, open orders), lent to each packet.
    book: SessionBook,
    /// The session table's id of each logical session.
    ids: HashMap<SessionName, u64>,
    /// The counts of the connections that ended.
    pub(crate) ended: OuchCounters,
}

/// The run's parts a binary connection's packets reach.
pub(crate) struct BinaryParts<'a> {
    pub(crate) framing: &'a mut FramingCounters,
    pub(crate) correlator: &'a mut Correlator,
    pub(crate) stats: &'a mut Stats,
    /// The next session id (shared with FIX's session layer: one table).
    pub(crate) next_session: &'a mut u64,
    pub(crate) run: &'a mut BinaryRun,
}

/// One reassembled event of a binary connection's `direction`.
#[cold]
pub(crate) fn stream_event(
    event: StreamEvent<'_>,
    b: &mut BinaryConnection,
    direction: Direction,
    conn: ConnectionKey,
    parts: BinaryParts<'_>,
) {
    let BinaryConnection {
        framers,
        ouch,
        session,
    } = b;
    let BinaryParts {
        framing,
        correlator,
        stats,
        next_session,
        run,
    } = parts;
    let framer = &mut framers[direction_index(direction)];
    match event {
        StreamEvent::Data { bytes, times, seq } => {
            let mut packet = Packet {
                correlator,
                stats,
                next_session,
                run,
            };
            framer.push_at(bytes, times, seq, framing, |msg| {
                packet.route(ouch, session, direction, conn, &msg)
            });
        }
        StreamEvent::Gap { .. } => framer.gap(framing),
    }
}

/// Where one framed packet goes.
struct Packet<'a> {
    correlator: &'a mut Correlator,
    stats: &'a mut Stats,
    next_session: &'a mut u64,
    run: &'a mut BinaryRun,
}

impl Packet<'_> {
    /// One framed packet of a binary connection: its order event, if any, to the
    /// correlator, its latencies to the consumers.
    fn route(
        &mut self,
        ouch: &mut OuchConnection,
        session: &mut Option<u64>,
        direction: Direction,
        conn: ConnectionKey,
        msg: &FramedMessage<'_>,
    ) {
        let (side, ts_ns) = match direction {
            Direction::Request => (Side::Client, msg.last_byte_ts_ns),
            Direction::Response => (Side::Host, msg.first_byte_ts_ns),
        };
        let out = ouch.on_packet(&mut self.run.book, side, msg.bytes, ts_ns);
        if let Some(SessionFact::LoggedIn { name, .. }) = out.fact {
            *session = Some(self.session_of(name, conn, ouch.version()));
        }
        if let Some(s) = session.and_then(|id| self.stats.session_mut(id)) {
            // The session table's health columns, from SoupBinTCP's own session layer.
            let (h, side) = (&mut s.health, direction_index(direction));
            h.last_message_ns[side] = Some(ts_ns);
            match out.fact {
                Some(SessionFact::LoggedIn { .. }) => h.logged_on = true,
                Some(SessionFact::LogoutRequested | SessionFact::EndOfSession) => {
                    h.logged_on = false
                }
                Some(SessionFact::Heartbeat) => h.last_heartbeat_ns[side] = Some(ts_ns),
                _ => {}
            }
        }
        let (Some(event), Some(id)) = (out.event, *session) else {
            return;
        };
        let scope = scope_of(id, 0);
        let Packet {
            correlator, stats, ..
        } = self;
        match event.order_event() {
            // A resend is no new order (counted by the order layer).
            OrderEvent::Request { resend: true, .. } => {}
            OrderEvent::Request {
                request_type, key, ..
            } => {
                if let Some(s) = stats.session_mut(id) {
                    s.requests += 1;
                }
                correlator.on_order_request(
                    scope,
                    request_type,
                    key,
                    0,
                    ts_ns,
                    msg.last_byte_seq,
                    |mut latency, key, replay| {
                        latency.session = id;
                        let code = [replay.msg_type];
                        let order = OrderRef {
                            key,
                            response_msg_type: &code,
                            exec_type: None,
                            ord_status: None,
                            response_ts_ns: replay.ts_ns,
                            breakdown: None,
                        };
                        stats.record_order(latency, &order);
                    },
                );
            }
            OrderEvent::Response {
                key,
                kind,
                ends,
                code,
            } => {
                if let Some(s) = stats.session_mut(id) {
                    s.responses += 1;
                }
                correlator.on_order_response(
                    scope,
                    key,
                    kind,
                    ends,
                    code,
                    ts_ns,
                    |mut latency, key| {
                        latency.session = id;
                        let order = OrderRef {
                            key,
                            response_msg_type: code.as_bytes(),
                            exec_type: None,
                            ord_status: None,
                            response_ts_ns: ts_ns,
                            breakdown: None,
                        };
                        stats.record_order(latency, &order);
                    },
                );
            }
        }
    }

    /// The session table's id of logical session `name` (opened when new), now on `conn`.
    #[cold]
    fn session_of(&mut self, name: SessionName, conn: ConnectionKey, version: Version) -> u64 {
        let table = self.stats.session_table_mut();
        let id = match self.run.ids.get(&name) {
            Some(&id) => id,
            None => {
                let id = *self.next_session;
                *self.next_session += 1;
                table.open(id, conn);
                if let Some(s) = table.get_mut(id) {
                    let text = |k: &fixscope_ouch::session::Key| {
                        String::from_utf8_lossy(k.as_bytes()).into_owned()
                    };
                    // The table's identity columns: the protocol, then username -> session.
                    s.begin_string = match version {
                        Version::Ouch42 => "OUCH 4.2".into(),
                        Version::Ouch50 => "OUCH 5.0".into(),
                    };
                    s.sender_comp_id = text(&name.username);
                    s.target_comp_id = text(&name.session);
                }
                self.run.ids.insert(name, id);
                id
            }
        };
        if let Some(s) = table.get_mut(id) {
            s.connection = conn;
            s.health.connections += 1;
        }
        id
    }
}

fn direction_index(direction: Direction) -> usize {
    match direction {
        Direction::Request => 0,
        Direction::Response => 1,
    }
}
