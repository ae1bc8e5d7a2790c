//! Order sessions in a binary protocol (`--protocol PORTS=ouch42|ouch50|ilink3`): a
//! connection whose watched port is named for one is framed by its protocol's framer
//! (SoupBinTCP; CME's SOFH), its messages read by the protocol's order layer
//! (`fixscope-ouch`, `fixscope-ilink3`: logical sessions, replays, resends, keyless
//! cancels) into the seam's order events and session signals, and those answered
//! by the correlator's protocol-neutral entry points — the same tracking, stages and
//! counters as FIX, on the same timing rules (a request at the segment that completes
//! it, a response at the one carrying its first byte).
//!
//! One pipeline runs them (the pcap plans pick it; live and tap have one): a logical
//! session's state spans its connections, which shards or a second stage would split.

use hashbrown::HashMap;

use fixscope_ilink3::orders::{Ilink3Connection, SessionBook as Ilink3Book};
use fixscope_ilink3::session::SessionFact as Ilink3Fact;
use fixscope_ilink3::sofh::SofhFramer;
use fixscope_ilink3::Side as Ilink3Side;
use fixscope_ouch::orders::{OuchConnection, SessionBook as OuchBook, Version};
use fixscope_ouch::session::{SessionFact as OuchFact, SessionName as OuchName};
use fixscope_ouch::soupbin::{Side as OuchSide, SoupBinFramer};
use fixscope_protocol::fields::{FieldName, FieldSelection, FieldValues, OrderFields};
use fixscope_protocol::{
    FramedMessage, Framer, OrderEvent, ProtocolName, RequestType, ResponseCode, ResponseKind,
};

use crate::consumer::OrderSink;
use crate::correlate::{scope_of, Correlator};
use crate::counters::{Ilink3Counters, OuchCounters};
use crate::group::{GroupSpec, GroupStats};
use crate::reassembly::StreamEvent;
use crate::segment::{ConnectionKey, Direction};
use crate::sink::{MessageEvent, MessageObserver};
use crate::slowest::OrderRef;
use crate::stats::Stats;
use fixscope_protocol::FramingCounters;

use super::held_frames::HeldFrames;

/// One connection of a binary order protocol: its session-table id and its protocol's
/// framers and order layer.
pub(crate) struct BinaryConnection {
    /// The session table's id of its logical session, once logged in.
    session: Option<u64>,
    layer: Layer,
}

/// A protocol's framers (request = client → host, response = host → client) and order
/// layer.
enum Layer {
    Ouch {
        framers: [SoupBinFramer; 2],
        orders: OuchConnection,
    },
    Ilink3 {
        framers: [SofhFramer; 2],
        orders: Ilink3Connection,
    },
    /// OUCH recognised by its SoupBinTCP login on a port `--protocol` names for none: its
    /// messages held until one shows the version (`fixscope_ouch::detect`), then read.
    OuchUnread(Box<OuchUnread>),
}

/// An OUCH connection whose version is not yet read.
#[derive(Default)]
struct OuchUnread {
    framers: [SoupBinFramer; 2],
    held: HeldFrames,
    /// A data packet (`U`, `S`) is held: orders wait on the version.
    holds_data: bool,
    /// The bounds were reached first: nothing more is read.
    given_up: bool,
}

impl BinaryConnection {
    /// The state of a connection of `protocol` (`None`: FIX, framed as FIX).
    pub(crate) fn of(protocol: ProtocolName) -> Option<Box<Self>> {
        let layer = match protocol {
            ProtocolName::Ouch42 | ProtocolName::Ouch50 => Layer::Ouch {
                framers: [SoupBinFramer::new(), SoupBinFramer::new()],
                orders: OuchConnection::new(if protocol == ProtocolName::Ouch42 {
                    Version::Ouch42
                } else {
                    Version::Ouch50
                }),
            },
            ProtocolName::Ilink3 => Layer::Ilink3 {
                framers: [SofhFramer::new(), SofhFramer::new()],
                orders: Ilink3Connection::new(),
            },
            ProtocolName::Fix => return None,
        };
        Some(Box::new(BinaryConnection {
            session: None,
            layer,
        }))
    }

    /// The state of a connection whose first payload, on a port `--protocol` names for no
    /// protocol, is a binary order protocol's login: iLink 3 (a Negotiate or Establish
    /// in CME's SOFH), or OUCH (a SoupBinTCP login: its version read from its messages).
    /// `None`: FIX, as every port is by default. A login split across segments is not
    /// seen (a prefix is no proof).
    #[cold]
    pub(crate) fn recognised(first_payload: &[u8]) -> Option<(Box<Self>, Recognised)> {
        use fixscope_protocol::{Protocol, Recognition};
        let (layer, what) = if fixscope_ilink3::Ilink3::recognise(first_payload) == Recognition::Yes
        {
            (
                Layer::Ilink3 {
                    framers: [SofhFramer::new(), SofhFramer::new()],
                    orders: Ilink3Connection::new(),
                },
                Recognised::Ilink3,
            )
        } else if fixscope_ouch::Ouch42::recognise(first_payload) == Recognition::Yes {
            (Layer::OuchUnread(Box::default()), Recognised::Ouch)
        } else {
            return None;
        };
        let b = Box::new(BinaryConnection {
            session: None,
            layer,
        });
        Some((b, what))
    }

    /// Adds what this connection's order layer counted to `to`.
    pub(crate) fn add_counters(&self, to: &mut BinaryCounters) {
        match &self.layer {
            Layer::Ouch { orders, .. } => to.ouch.merge_from(orders.counters()),
            Layer::Ilink3 { orders, .. } => to.ilink3.merge_from(orders.counters()),
            Layer::OuchUnread(u) => {
                to.ouch.ouch_version_unread += u64::from(u.holds_data || u.given_up);
            }
        }
    }
}

/// A binary order protocol recognised by its login (no `--protocol` for its port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recognised {
    Ouch,
    Ilink3,
}

impl Recognised {
    /// What a run that cannot read it on its plan says (it is read on one pipeline).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Recognised::Ouch => "an OUCH session (a SoupBinTCP login) on a port read as FIX",
            Recognised::Ilink3 => "an iLink 3 session (a FIXP login) on a port read as FIX",
        }
    }
}

/// The binary protocols' counters, summed over connections.
#[derive(Clone, Copy, Default)]
pub(crate) struct BinaryCounters {
    pub(crate) ouch: OuchCounters,
    pub(crate) ilink3: Ilink3Counters,
}

/// A logical session of any binary protocol: what names its row in the session table.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum LogicalName {
    Ouch(OuchName, Version),
    /// An iLink 3 session is its UUID, across connections.
    Ilink3 {
        uuid: u64,
    },
}

impl LogicalName {
    /// The session table's identity columns: the protocol, then sender -> target (iLink 3:
    /// its firm -> its UUID).
    fn columns(&self, firm: &[u8]) -> (String, String, String) {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            LogicalName::Ilink3 { uuid } => ("iLink 3".into(), text(firm), uuid.to_string()),
            LogicalName::Ouch(name, version) => (
                match version {
                    Version::Ouch42 => "OUCH 4.2".into(),
                    Version::Ouch50 => "OUCH 5.0".into(),
                },
                text(name.username.as_bytes()),
                text(name.session.as_bytes()),
            ),
        }
    }
}

/// What one framed message means to the session table, in no protocol's words.
#[derive(Clone, Copy)]
enum SessionSignal {
    /// The connection now carries this logical session (iLink 3: of this firm, when
    /// known).
    Opened(LogicalName, Firm),
    /// The session was ended by either side.
    Closed,
    /// A keep-alive.
    Heartbeat,
    Other,
}

/// An iLink 3 firm, for the session table (empty for OUCH).
type Firm = fixscope_ilink3::session::Key;

/// How one protocol's fields are read, and which: `--by`'s (by position) and the
/// records' (by role), picked once for the run.
#[derive(Clone, Copy)]
struct ProtocolFields {
    read: fn(&[u8], &FieldSelection, &mut FieldValues),
    by: FieldSelection,
    records: FieldSelection,
}

impl ProtocolFields {
    fn of<P: OrderFields>(by: Option<&GroupSpec>) -> Self {
        ProtocolFields {
            read: P::read,
            by: by.map_or_else(FieldSelection::default, |spec| {
                FieldSelection::pick(P::FIELDS, spec.names().map(|n| n.unwrap_or("")))
            }),
            records: FieldSelection::roles(P::FIELDS),
        }
    }
}

/// Each binary protocol's [`ProtocolFields`].
struct RunFields {
    ouch42: ProtocolFields,
    ouch50: ProtocolFields,
    ilink3: ProtocolFields,
}

impl RunFields {
    fn of(by: Option<&GroupSpec>) -> Self {
        RunFields {
            ouch42: ProtocolFields::of::<fixscope_ouch::Ouch42>(by),
            ouch50: ProtocolFields::of::<fixscope_ouch::Ouch50>(by),
            ilink3: ProtocolFields::of::<fixscope_ilink3::Ilink3>(by),
        }
    }
}

/// The fields by name of a binary protocol's order messages (`--by NAME`, the records'
/// columns); none for FIX, whose `--by` takes tag numbers.
pub fn order_fields(protocol: ProtocolName) -> &'static [FieldName] {
    match protocol {
        ProtocolName::Fix => &[],
        ProtocolName::Ouch42 => <fixscope_ouch::Ouch42 as OrderFields>::FIELDS,
        ProtocolName::Ouch50 => <fixscope_ouch::Ouch50 as OrderFields>::FIELDS,
        ProtocolName::Ilink3 => <fixscope_ilink3::Ilink3 as OrderFields>::FIELDS,
    }
}

/// What a run keeps of its binary sessions beyond their connections.
pub(crate) struct BinaryRun {
    /// The logical sessions (replays, resends, open orders) of each protocol, lent to each
    /// message.
    ouch: OuchBook,
    ilink3: Ilink3Book,
    /// The session table's id of each logical session.
    ids: HashMap<LogicalName, u64>,
    /// The counts of the connections that ended.
    pub(crate) ended: BinaryCounters,
    /// Protocols recognised by their logins (their counters are shown as if named).
    pub(crate) recognised_ouch: bool,
    pub(crate) recognised_ilink3: bool,
    /// A worker of a multi-threaded plan recognised a binary session it cannot read
    /// (its logical session spans connections): the run is read again on one pipeline.
    pub(crate) needs_one_pipeline: Option<&'static str>,
    /// The fields read by name, per protocol.
    fields: RunFields,
}

impl BinaryRun {
    /// A run grouping by `by` (`--by`'s protocol fields are picked per protocol now).
    pub(crate) fn new(by: Option<&GroupSpec>) -> Self {
        BinaryRun {
            ouch: OuchBook::default(),
            ilink3: Ilink3Book::default(),
            ids: HashMap::new(),
            ended: BinaryCounters::default(),
            recognised_ouch: false,
            recognised_ilink3: false,
            needs_one_pipeline: None,
            fields: RunFields::of(by),
        }
    }

    /// Notes that `what` was recognised and is read on this pipeline.
    pub(crate) fn note_recognised(&mut self, what: Recognised) {
        match what {
            Recognised::Ouch => self.recognised_ouch = true,
            Recognised::Ilink3 => self.recognised_ilink3 = true,
        }
    }
}

/// The run's parts a binary connection's packets reach.
pub(crate) struct BinaryParts<'a> {
    pub(crate) framing: &'a mut FramingCounters,
    pub(crate) correlator: &'a mut Correlator,
    pub(crate) stats: &'a mut Stats,
    /// The next session id (shared with FIX's session layer: one table).
    pub(crate) next_session: &'a mut u64,
    pub(crate) run: &'a mut BinaryRun,
    /// `--trace`: every request and response event.
    pub(crate) observer: &'a mut Option<MessageObserver>,
    pub(crate) unix_offset_ns: i64,
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
    let BinaryConnection { session, layer } = b;
    let BinaryParts {
        framing,
        correlator,
        stats,
        next_session,
        run,
        observer,
        unix_offset_ns,
    } = parts;
    let BinaryRun {
        ouch: ouch_book,
        ilink3: ilink3_book,
        ids,
        fields,
        ..
    } = run;
    let run_fields = &*fields;
    let fields = match layer {
        Layer::Ouch { orders, .. } if orders.version() == Version::Ouch42 => fields.ouch42,
        // Nothing is routed before the version is read; then its fields (below).
        Layer::Ouch { .. } | Layer::OuchUnread(_) => fields.ouch50,
        Layer::Ilink3 { .. } => fields.ilink3,
    };
    let mut packet = Packet {
        correlator,
        stats,
        next_session,
        ids,
        observer,
        unix_offset_ns,
        fields,
    };
    let d = direction_index(direction);
    match (layer, event) {
        (Layer::Ouch { framers, orders }, StreamEvent::Data { bytes, times, seq }) => {
            framers[d].push_at(bytes, times, seq, framing, |msg| {
                ouch_message(
                    orders,
                    ouch_book,
                    &mut packet,
                    session,
                    direction,
                    conn,
                    &msg,
                )
            });
        }
        (layer @ Layer::OuchUnread(_), event) => {
            let read = unread_event(event, layer, direction, framing);
            if let Some(held) = read {
                let Layer::Ouch { orders, .. } = layer else {
                    unreachable!("unread_event made the layer OUCH's")
                };
                packet.fields = match orders.version() {
                    Version::Ouch42 => run_fields.ouch42,
                    Version::Ouch50 => run_fields.ouch50,
                };
                held.each(|direction, msg| {
                    ouch_message(
                        orders,
                        ouch_book,
                        &mut packet,
                        session,
                        direction,
                        conn,
                        msg,
                    )
                });
            }
        }
        (Layer::Ilink3 { framers, orders }, StreamEvent::Data { bytes, times, seq }) => {
            let side = match direction {
                Direction::Request => Ilink3Side::Client,
                Direction::Response => Ilink3Side::Host,
            };
            framers[d].push_at(bytes, times, seq, framing, |msg| {
                let ts_ns = message_time(direction, &msg);
                let out = orders.on_message(ilink3_book, side, msg.bytes, ts_ns);
                // A UUID is named by Establish(mentAck), or, in a capture that began
                // after them, by CME's own business messages.
                let named = orders.session().copied();
                let signal = match (out.fact, named) {
                    (Some(Ilink3Fact::Established { name, .. }), _) => {
                        SessionSignal::Opened(LogicalName::Ilink3 { uuid: name.uuid }, name.firm)
                    }
                    (_, Some(name)) if session.is_none() => {
                        SessionSignal::Opened(LogicalName::Ilink3 { uuid: name.uuid }, name.firm)
                    }
                    (Some(Ilink3Fact::Terminated { .. }), _) => SessionSignal::Closed,
                    (Some(Ilink3Fact::Heartbeat { .. }), _) => SessionSignal::Heartbeat,
                    _ => SessionSignal::Other,
                };
                let event = out.event.as_ref().map(|e| e.order_event());
                packet.route(event, signal, session, direction, conn, ts_ns, &msg)
            });
        }
        (Layer::Ouch { framers, .. }, StreamEvent::Gap { .. }) => framers[d].gap(framing),
        (Layer::Ilink3 { framers, .. }, StreamEvent::Gap { .. }) => framers[d].gap(framing),
    }
}

/// One SoupBinTCP packet of an OUCH connection: through its order layer to the session
/// table and the correlator.
fn ouch_message(
    orders: &mut OuchConnection,
    book: &mut OuchBook,
    packet: &mut Packet<'_>,
    session: &mut Option<u64>,
    direction: Direction,
    conn: ConnectionKey,
    msg: &FramedMessage<'_>,
) {
    let side = match direction {
        Direction::Request => OuchSide::Client,
        Direction::Response => OuchSide::Host,
    };
    let ts_ns = message_time(direction, msg);
    let out = orders.on_packet(book, side, msg.bytes, ts_ns);
    let signal = match out.fact {
        Some(OuchFact::LoggedIn { name, .. }) => {
            SessionSignal::Opened(LogicalName::Ouch(name, orders.version()), Firm::default())
        }
        Some(OuchFact::LogoutRequested | OuchFact::EndOfSession) => SessionSignal::Closed,
        Some(OuchFact::Heartbeat) => SessionSignal::Heartbeat,
        _ => SessionSignal::Other,
    };
    let event = out.event.as_ref().map(|e| e.order_event());
    packet.route(event, signal, session, direction, conn, ts_ns, msg)
}

/// One stream event of an OUCH connection whose version is not yet read: its packets
/// held; once one shows the version the layer becomes OUCH's of that version and the
/// held packets are returned, to be read in their order. Past the bounds, given up.
#[cold]
fn unread_event(
    event: StreamEvent<'_>,
    layer: &mut Layer,
    direction: Direction,
    framing: &mut FramingCounters,
) -> Option<HeldFrames> {
    let Layer::OuchUnread(u) = layer else {
        return None;
    };
    if u.given_up {
        return None;
    }
    let d = direction_index(direction);
    let mut version = None;
    match event {
        StreamEvent::Data { bytes, times, seq } => {
            let OuchUnread {
                framers,
                held,
                holds_data,
                given_up,
            } = &mut **u;
            framers[d].push_at(bytes, times, seq, framing, |msg| {
                if version.is_none() {
                    version = fixscope_ouch::detect::version_of(msg.bytes);
                }
                *holds_data |= matches!(msg.bytes.get(2), Some(b'U' | b'S'));
                *given_up |= !held.hold(direction, &msg);
            });
        }
        StreamEvent::Gap { .. } => u.framers[d].gap(framing),
    }
    match version {
        Some(version) => {
            let u = std::mem::take(&mut **u);
            *layer = Layer::Ouch {
                framers: u.framers,
                orders: OuchConnection::new(version),
            };
            Some(u.held)
        }
        None => {
            if u.given_up {
                // Counted `ouch_version_unread` (add_counters); the memory goes now.
                u.held = HeldFrames::default();
            }
            None
        }
    }
}

/// A request at the segment that completes it, a response at the one carrying its first
/// byte (the seam's timing rule, as FIX's).
fn message_time(direction: Direction, msg: &FramedMessage<'_>) -> u64 {
    match direction {
        Direction::Request => msg.last_byte_ts_ns,
        Direction::Response => msg.first_byte_ts_ns,
    }
}

/// Where one framed message goes.
struct Packet<'a> {
    correlator: &'a mut Correlator,
    stats: &'a mut Stats,
    next_session: &'a mut u64,
    ids: &'a mut HashMap<LogicalName, u64>,
    observer: &'a mut Option<MessageObserver>,
    unix_offset_ns: i64,
    fields: ProtocolFields,
}

impl Packet<'_> {
    /// One framed message of a binary connection: its session signal to the session
    /// table, its order event, if any, to the correlator, its latencies to the consumers.
    #[allow(clippy::too_many_arguments)]
    fn route(
        &mut self,
        event: Option<OrderEvent<'_>>,
        signal: SessionSignal,
        session: &mut Option<u64>,
        direction: Direction,
        conn: ConnectionKey,
        ts_ns: u64,
        msg: &FramedMessage<'_>,
    ) {
        if let SessionSignal::Opened(name, firm) = signal {
            *session = Some(self.session_of(name, &firm, *session, conn));
        }
        if let Some(s) = session.and_then(|id| self.stats.session_mut(id)) {
            // The session table's health columns, from the protocol's own session layer.
            let (h, side) = (&mut s.health, direction_index(direction));
            h.last_message_ns[side] = Some(ts_ns);
            match signal {
                SessionSignal::Opened(..) => h.logged_on = true,
                SessionSignal::Closed => h.logged_on = false,
                SessionSignal::Heartbeat => h.last_heartbeat_ns[side] = Some(ts_ns),
                SessionSignal::Other => {}
            }
        }
        let (Some(event), Some(id)) = (event, *session) else {
            return;
        };
        if let Some(observe) = self.observer.as_mut() {
            let (code, key) = match &event {
                OrderEvent::Request { code, key, .. } => (code, key),
                OrderEvent::Response { code, key, .. } => (code, key),
            };
            observe(&MessageEvent {
                ts_ns,
                session: id,
                direction,
                msg_type: code.as_bytes(),
                key: shown_key(key),
                unix_offset_ns: self.unix_offset_ns,
                sender_comp_id: b"",
                target_comp_id: b"",
                msg_seq_num: 0,
                poss_dup: false,
            });
        }
        match event {
            // A resend is no new order (counted by the order layer).
            OrderEvent::Request { resend: true, .. } => {}
            OrderEvent::Request {
                request_type,
                key,
                code,
                ..
            } => self.request(id, request_type, key, code, ts_ns, msg),
            OrderEvent::Response {
                key,
                kind,
                ends,
                code,
            } => self.response(id, (key, ends), kind, code, ts_ns, msg),
        }
    }

    /// A request of session `id` to the correlator, with its `--by` ids and (with
    /// records) its fields.
    fn request(
        &mut self,
        id: u64,
        request_type: RequestType,
        key: &[u8],
        code: ResponseCode,
        ts_ns: u64,
        msg: &FramedMessage<'_>,
    ) {
        let Packet {
            correlator,
            stats,
            fields,
            ..
        } = self;
        if let Some(s) = stats.session_mut(id) {
            s.requests += 1;
        }
        let groups = request_groups(stats.by_mut(), fields, msg.bytes);
        if let Some(book) = correlator.records_mut() {
            let mut roles = FieldValues::default();
            (fields.read)(msg.bytes, &fields.records, &mut roles);
            let roles = [roles.get(0), roles.get(1), roles.get(2)];
            book.fields
                .set_parts(code.as_bytes(), shown_key(key), roles);
        }
        correlator.on_order_request_grouped(
            scope_of(id, 0),
            request_type,
            key,
            0,
            ts_ns,
            msg.last_byte_seq,
            groups,
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

    /// A response of session `id` (to the order under `keys.0`, ending `keys.1`'s too) to
    /// the correlator; `--by` values its order's request lacked come from it (read once).
    fn response(
        &mut self,
        id: u64,
        (key, ends): (&[u8], &[u8]),
        kind: ResponseKind,
        code: ResponseCode,
        ts_ns: u64,
        msg: &FramedMessage<'_>,
    ) {
        let Packet {
            correlator,
            stats,
            fields,
            ..
        } = self;
        if let Some(s) = stats.session_mut(id) {
            s.responses += 1;
        }
        let mut response_values: Option<FieldValues> = None;
        correlator.on_order_response(
            scope_of(id, 0),
            key,
            kind,
            ends,
            code,
            ts_ns,
            |mut latency, key| {
                latency.session = id;
                if let Some(by) = stats.by_mut() {
                    let n = by.spec.fields.len();
                    if !fields.by.is_empty()
                        && GroupStats::needs_response_values(&latency.groups, n)
                    {
                        let values = response_values.get_or_insert_with(|| {
                            let mut v = FieldValues::default();
                            (fields.read)(msg.bytes, &fields.by, &mut v);
                            v
                        });
                        by.complete(&mut latency.groups, &values.by_values());
                    }
                }
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

    /// The session table's id of logical session `name` (opened when new), now on `conn`
    /// (a connection more, unless `conn` carried it already: `current`).
    #[cold]
    fn session_of(
        &mut self,
        name: LogicalName,
        firm: &Firm,
        current: Option<u64>,
        conn: ConnectionKey,
    ) -> u64 {
        let table = self.stats.session_table_mut();
        let id = match self.ids.get(&name) {
            Some(&id) => id,
            None => {
                let id = *self.next_session;
                *self.next_session += 1;
                table.open(id, conn);
                if let Some(s) = table.get_mut(id) {
                    (s.begin_string, s.sender_comp_id, s.target_comp_id) =
                        name.columns(firm.as_bytes());
                }
                self.ids.insert(name, id);
                id
            }
        };
        if let Some(s) = table.get_mut(id) {
            if s.sender_comp_id.is_empty() && !firm.is_empty() {
                // The firm, learned after the UUID (a capture that began mid-session).
                s.sender_comp_id = String::from_utf8_lossy(firm.as_bytes()).into_owned();
            }
            if current != Some(id) {
                s.connection = conn;
                s.health.connections += 1;
            }
        }
        id
    }
}

/// A request's `--by` ids: its values of the protocol's fields asked for (read only
/// with `--by`, and only when the protocol has one of them; else every position is
/// `(none)`, as a FIX order without the tag).
fn request_groups(
    by: Option<&mut GroupStats>,
    fields: &ProtocolFields,
    frame: &[u8],
) -> fixscope_model::order::Groups {
    let Some(by) = by else {
        return fixscope_model::order::NO_GROUPS;
    };
    let mut values = FieldValues::default();
    if !fields.by.is_empty() {
        (fields.read)(frame, &fields.by, &mut values);
    }
    by.request(&values.by_values())
}

/// A tracking key as the records and the trace show it: the order's own key. OUCH tracks a cancel
/// or a modify under its order's key and a mark that begins with a byte no real key has
/// (`CANCEL_MARK`, `MODIFY_MARK`): shown without the mark (the message type says which).
fn shown_key(key: &[u8]) -> &[u8] {
    let mark = fixscope_ouch::orders::CANCEL_MARK[0];
    debug_assert_eq!(mark, fixscope_ouch::orders::MODIFY_MARK[0]);
    key.iter()
        .position(|&b| b == mark)
        .map_or(key, |i| &key[..i])
}

fn direction_index(direction: Direction) -> usize {
    match direction {
        Direction::Request => 0,
        Direction::Response => 1,
    }
}
