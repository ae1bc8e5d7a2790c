//! The shared pipeline: segments in, latencies recorded, reports out.
//!
//! ```text
//! Segment ─▶ connection table ─▶ StreamReassembler (per direction)
//!          ─▶ StreamFramer (per direction) ─▶ MessageFacts ─▶ Correlator ─▶ Stats ─▶ Reporter
//! ```
//!
//! Timing rule: a request's time is that of the segment carrying its last byte (the
//! application cannot act on it earlier); a response's time is that of the segment carrying
//! its first byte (the application has answered by then). Sources and reporters plug in at
//! the ends; nothing in between knows where segments came from or where figures go.

use std::io;

use hashbrown::HashMap;

use crate::breakdown::Breakdown;
use crate::correlate::Correlator;
use crate::fix::framing::FramingCounters;
use crate::hops::HopLinker;
use crate::points::PointJoiner;
use crate::reassembly::{ReassemblyCounters, ReassemblyLimits};
use crate::report::{Counters, Reporter, SummaryReport, TimeSpan};
use crate::segment::{ConnectionKey, Direction, Segment};
use crate::session::{Binding, SessionLayer};
use crate::socket_event::SocketEvent;
use crate::source::Counter;
use crate::stats::Stats;
use share::ShardState;

mod binary;
mod config;
mod connections;
mod deadlines;
pub(crate) mod forward;
pub(crate) mod handover;
mod held_frames;
pub(crate) mod interval_clock;
mod records;
pub(crate) mod report_side;
mod reports;
mod routing;
mod run_counters;
mod shard_glue;
pub mod share;
mod stages;

pub use crate::sink::{LinkRow, MessageEvent, MessageObserver, OrderRow, RecordSink};
pub use binary::order_fields;
pub use config::PipelineConfig;
use connections::{ClosedConnections, Connection, CLOSED_CONNECTION_MEMORY_NS};
use deadlines::Deadlines;
use forward::{Forwarder, Upstream};
use interval_clock::IntervalClock;
pub(crate) use reports::{close_and_report_interval, report_end, report_interval, RunEnd};
use routing::{MessageSink, Router};

/// Stage B's view of a connection of stage A (`slots`).
type Slot = (
    Option<Binding>,
    ConnectionKey,
    Option<crate::tls::TlsSession>,
);

/// The pipeline of one run.
pub struct Pipeline {
    observer: Option<MessageObserver>,
    observed_key: Vec<u8>,
    /// `--records`: where each order's record goes when the order is done.
    record_sink: Option<Box<dyn RecordSink>>,
    /// The links taken from the hop linker (reused).
    link_rows: Vec<crate::hops::LinkRecord>,
    /// The records taken from the correlator (reused).
    #[allow(clippy::vec_box)] // the record book's rows, swapped in (see `RecordBook`)
    record_rows: Vec<Box<crate::correlate::OrderRecord>>,
    config: PipelineConfig,
    connections: HashMap<ConnectionKey, Connection>,
    next_session: u64,
    /// The FIX session layer: sessions by CompIDs, epochs, sequence numbers, replays.
    session_layer: SessionLayer,
    /// Binary order protocols' logical sessions (`--protocol`).
    binary: binary::BinaryRun,
    correlator: Correlator,
    stats: Stats,
    framing: FramingCounters,
    reassembly: ReassemblyCounters,
    /// TLS decryption's counts (reported with `--tls-keylog` only).
    tls: crate::counters::TlsCounters,
    segments: u64,
    first_ts_ns: Option<u64>,
    now_ns: u64,
    interval_clock: IntervalClock,
    last_sweep_ns: u64,
    shed_connections: u64,
    /// TCP connections opened (a reused 4-tuple after a new SYN counts again).
    connections_opened: u64,
    /// Connections recently closed (FIN both ways or RST): their trailing ACK/FIN/RST must
    /// not open a new connection (a phantom session).
    closed: ClosedConnections,
    /// Holes the peer acknowledged, waiting for the reorder window.
    acked_holes: Deadlines,
    /// Live `--tls-keylog`: connections held for their key, by the end of their wait.
    held_for_key: Deadlines,
    /// Segments that belong to no open connection and open none (see `stray_segments`).
    stray_segments: u64,
    /// The counters at the end of the previous interval, for each interval's own counts.
    interval_start_counters: Counters,
    /// Added to timestamps for UNIX time in reports (the source's clock).
    unix_offset_ns: i64,
    /// The in-host breakdown (`--breakdown`).
    breakdown: Option<Breakdown>,
    /// Hop by hop (`--leg`).
    hops: Option<HopLinker>,
    /// Two points (`--point`): the near point's orders joined with the far point's.
    points: Option<PointJoiner>,
    /// Who stamped the packets, named in every report (`live --tap`).
    timestamp_source: Option<&'static str>,
    /// A worker of a sharded run (`crate::shard`): the global index of the segment being
    /// fed, and of the segment that opened each session not yet handed to the merger.
    shard: Option<ShardState>,
    /// Stage A of a two-stage run (`crate::twostage`): framed messages and what stage B
    /// must do between them go to this instead of the session layer and correlator.
    forward: Option<Forwarder>,
    /// Stage B of a two-stage run: stage A's counters as of the last event that carried
    /// them (an interval's end, the end), in place of this pipeline's own.
    upstream: Option<Upstream>,
    /// Stage B: each open connection's session binding and key, by stage A's slot, and
    /// its TLS version and suite until its session has them.
    slots: Vec<Option<Slot>>,
    /// Stage B: the sessions of `stats` already handed to the reporting side.
    sessions_handed_over: usize,
}

impl Pipeline {
    pub fn new(config: PipelineConfig) -> Self {
        let timestamp_source = config.timestamp_source;
        Pipeline {
            observer: None,
            observed_key: Vec::new(),
            record_sink: None,
            record_rows: Vec::new(),
            link_rows: Vec::new(),
            correlator: Correlator::new(config.key.clone(), config.correlation),
            stats: Stats::with_config(config.consumers()),
            breakdown: config
                .breakdown
                .then(|| Breakdown::new(config.breakdown_role)),
            hops: config.hops.clone().map(HopLinker::new),
            points: config.points.clone().map(PointJoiner::new),
            interval_clock: IntervalClock::new(config.interval_ns),
            binary: binary::BinaryRun::new(config.by.as_ref()),
            config,
            connections: HashMap::new(),
            next_session: 1,
            session_layer: SessionLayer::new(),
            framing: FramingCounters::default(),
            reassembly: ReassemblyCounters::default(),
            tls: Default::default(),
            segments: 0,
            first_ts_ns: None,
            now_ns: 0,
            last_sweep_ns: 0,
            shed_connections: 0,
            connections_opened: 0,
            closed: ClosedConnections::default(),
            acked_holes: Deadlines::default(),
            held_for_key: Deadlines::default(),
            stray_segments: 0,
            interval_start_counters: Counters::default(),
            unix_offset_ns: 0,
            timestamp_source,
            shard: None,
            forward: None,
            upstream: None,
            slots: Vec::new(),
            sessions_handed_over: 0,
        }
    }

    /// Names who stamps the packets (`host`, `adapter`, `adapter_unsynced`) in every
    /// report of this run.
    pub fn set_timestamp_source(&mut self, name: &'static str) {
        self.timestamp_source = Some(name);
    }

    /// Tells the pipeline how its timestamps map to UNIX time
    /// ([`crate::source::Source::unix_offset_ns`]), for wall-clock times in reports.
    pub fn set_unix_offset_ns(&mut self, unix_offset_ns: i64) {
        self.unix_offset_ns = unix_offset_ns;
    }

    /// The UNIX offset reports use now ([`Pipeline::set_unix_offset_ns`]).
    pub fn unix_offset_ns(&self) -> i64 {
        self.unix_offset_ns
    }

    /// Calls `observer` for every request and response (D/F/G, 8/9) framed, after the
    /// observers set before it (`--trace` and `--records` both observe).
    pub fn set_message_observer(&mut self, mut observer: MessageObserver) {
        self.observer = Some(match self.observer.take() {
            Some(mut first) => Box::new(move |e: &MessageEvent<'_>| {
                first(e);
                observer(e)
            }),
            None => observer,
        });
    }

    /// Hands every order's record to `sink` when the order is done (`--records`): one
    /// per request, with its outcome. The last ones go at [`Pipeline::finish`].
    pub fn set_record_sink(&mut self, sink: Box<dyn RecordSink>) {
        self.correlator.keep_records();
        if let Some(h) = self.hops.as_mut() {
            h.keep_link_records();
        }
        self.record_sink = Some(sink);
    }

    /// Gives the records of the orders done since the last call to the sink (and a
    /// router's links).
    fn hand_records(&mut self) {
        if self.hops.is_some() {
            self.hand_links();
        }
        let Some(sink) = self.record_sink.as_mut() else {
            return;
        };
        let Some(book) = self.correlator.records_mut() else {
            return;
        };
        if !book.has_done() {
            return;
        }
        book.take_done(&mut self.record_rows);
        let offset = self.unix_offset_ns;
        for record in &self.record_rows {
            let session = records::record_session(record);
            let names = crate::order::SessionNames::names(self.stats.session_table(), session);
            sink.order(&OrderRow {
                record,
                session,
                sender_comp_id: names.sender_comp_id,
                target_comp_id: names.target_comp_id,
                request_time_ns: record.request_ts_ns.map(|t| t as i64 + offset),
            });
        }
    }

    /// Gives the links of the parents forgotten since the last call to the sink.
    fn hand_links(&mut self) {
        let (Some(sink), Some(hops)) = (self.record_sink.as_mut(), self.hops.as_mut()) else {
            return;
        };
        hops.take_link_records(&mut self.link_rows);
        let table = self.stats.session_table();
        for record in &self.link_rows {
            let parent = crate::order::SessionNames::names(table, record.parent_session);
            let child = crate::order::SessionNames::names(table, record.child_session);
            sink.link(&LinkRow {
                record,
                parent_sender_comp_id: parent.sender_comp_id,
                parent_target_comp_id: parent.target_comp_id,
                child_sender_comp_id: child.sender_comp_id,
                child_target_comp_id: child.target_comp_id,
                unix_offset_ns: self.unix_offset_ns,
            });
        }
    }

    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// The hop linker (`--leg`).
    pub fn hops(&self) -> Option<&HopLinker> {
        self.hops.as_ref()
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Latest timestamp seen.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Feeds one socket call (`--breakdown`): placed on its connection's stream by sequence
    /// number; the orders it completes get their breakdown (see [`crate::breakdown`]).
    /// Calls do not move the pipeline's clock: the two rings of a live source drift apart,
    /// and a call stamped after a response still in the other ring must not raise `-t`.
    pub fn on_socket_event(&mut self, ev: &SocketEvent) {
        if let Some(b) = self.breakdown.as_mut() {
            b.on_socket_event(ev, &mut self.stats);
        }
    }

    /// `live --tls-uprobes`: an OpenSSL call's plaintext, placed on its connection's TLS
    /// records (a call of a connection not seen on the wire, or not followed by calls,
    /// is not placed: [`crate::tls::TlsConnection::call`] counts it).
    pub fn on_tls_call(&mut self, ev: &crate::socket_event::TlsCallEvent<'_>) {
        let key = ev.connection();
        let Parts {
            connections,
            mut sink,
            ..
        } = self.parts();
        let note = ev.call.kind == crate::tls::CallKind::MemoryBio;
        let Some(conn) = connections.get_mut(&key) else {
            if !note {
                sink.tls.tls_uprobe_unmapped += 1;
            }
            return;
        };
        let Some(tls) = conn.tls.as_mut() else {
            if !note {
                sink.tls.tls_uprobe_ignored += 1;
            }
            return;
        };
        let (key, slot, direction) = (conn.key, conn.slot, ev.direction);
        let (this, other) = match direction {
            Direction::Request => (&mut conn.request, &mut conn.response),
            Direction::Response => (&mut conn.response, &mut conn.request),
        };
        sink.tls_stream_event(
            routing::TlsInput::Call(&ev.call),
            tls,
            [&mut this.framer, &mut other.framer],
            direction,
            &mut conn.binding,
            key,
            slot,
        );
    }

    /// A live capture's start (its hooks attached, [`crate::source::Source::capture_started_ns`]):
    /// the run's window and its first interval begin here rather than at the first segment.
    /// Call before the first segment.
    pub fn start_window_at(&mut self, ts_ns: u64) {
        self.first_ts_ns.get_or_insert(ts_ns);
        self.interval_clock.start_at(ts_ns);
        self.now_ns = self.now_ns.max(ts_ns);
    }

    /// Feeds one segment.
    pub fn on_segment(&mut self, seg: &Segment<'_>) {
        if self.record_sink.is_some() {
            self.hand_records();
        }
        self.segments += 1;
        self.now_ns = self.now_ns.max(seg.ts_ns);
        self.first_ts_ns.get_or_insert(seg.ts_ns);
        // Holes acknowledged a reorder window ago are capture drops: what was held behind
        // them goes on before a response waiting for it in the correlator expires.
        if self.acked_holes.due(self.now_ns) {
            self.give_up_acked_holes();
        }
        // Live: a connection held for its TLS key past its wait is `no_key` now, even if
        // no segment of it comes again.
        if self.held_for_key.due(self.now_ns) {
            self.key_waits_due();
        }
        // Requests older than the time-to-live at this moment cannot be answered by it.
        match self.forward.as_mut() {
            Some(f) => f.clock(self.now_ns),
            None => self.correlator.expire(self.now_ns),
        }
        let key = seg.connection();
        if !self.connections.contains_key(&key) && !seg.flags.syn() {
            // A segment without SYN on no open connection opens one only if it carries
            // payload (a capture that starts mid-connection) and its connection did not just
            // close: the trailing ACK/FIN/RST after both FINs, or a late retransmission, is
            // no new connection and no new session.
            if seg.payload.is_empty() || self.closed.contains(&key) {
                self.stray_segments += 1;
                self.housekeeping();
                return;
            }
        }

        let Parts {
            connections,
            connections_opened,
            closed,
            acked_holes,
            reassembly,
            limits,
            mut sink,
            ..
        } = self.parts();
        let conn = connections.entry(key).or_insert_with(|| {
            *connections_opened += 1;
            closed.forget(&key);
            if let Some(b) = sink.router.breakdown.as_mut() {
                b.connection_opened(&key);
            }
            Connection::new(
                key,
                seg.ts_ns,
                sink.opened(key),
                sink.tls_keys.is_some(),
                sink.protocols.of(key.server.port),
            )
        });
        // A SYN with a new initial sequence number on a known 4-tuple is a new connection
        // (port reuse): its messages bind their session afresh, so the old connection's
        // anonymous session and its ClOrdIDs never mix with the new one's.
        let half = match seg.direction {
            Direction::Request => &conn.request,
            Direction::Response => &conn.response,
        };
        let reused = seg.flags.syn()
            && half
                .syn_seq
                .map_or(conn.payload_seen, |first_syn| first_syn != seg.seq);
        if reused {
            *connections_opened += 1;
            conn.close(&mut sink);
            *conn = Connection::new(
                key,
                seg.ts_ns,
                sink.opened(key),
                sink.tls_keys.is_some(),
                sink.protocols.of(key.server.port),
            );
            if let Some(b) = sink.router.breakdown.as_mut() {
                // The old connection's calls are not this one's.
                b.drop_connection(&key);
            }
        }
        if !conn.payload_seen && !seg.payload.is_empty() && conn.binary.is_none() {
            conn.binary = sink.recognise_protocol(key.server.port, seg.payload);
        }
        conn.payload_seen |= !seg.payload.is_empty();
        conn.last_seen_ns = seg.ts_ns;
        if seg.flags.syn() {
            match seg.direction {
                Direction::Request => conn.request.syn_seq = Some(seg.seq),
                Direction::Response => conn.response.syn_seq = Some(seg.seq),
            }
        }
        let direction = seg.direction;
        let slot = conn.slot;
        let binding = &mut conn.binding;
        let tls = &mut conn.tls;
        let binary = &mut conn.binary;
        let (this, other) = match direction {
            Direction::Request => (&mut conn.request, &mut conn.response),
            Direction::Response => (&mut conn.response, &mut conn.request),
        };
        // This segment's ACK tells what the peer received of the other direction: a hole
        // there it covers is a capture drop once the reorder window has passed (the capture
        // host may write the ACK before the segment: `Deadlines`).
        if seg.flags.ack() {
            other.reassembler.peer_acked(seg.ack);
            if let Some(deadline) = other.reassembler.take_new_deadline() {
                acked_holes.insert(deadline, key);
            }
        }
        this.reassembler.push(
            seg.seq,
            seg.flags.syn(),
            seg.flags.fin() || seg.flags.rst(),
            seg.payload,
            seg.missing_tail,
            seg.ts_ns,
            limits,
            reassembly,
            |event| {
                sink.half_stream_event(
                    event,
                    tls,
                    binary,
                    [&mut this.framer, &mut other.framer],
                    direction,
                    binding,
                    key,
                    slot,
                )
            },
        );
        if let Some(deadline) = this.reassembler.take_new_deadline() {
            acked_holes.insert(deadline, key);
        }
        if seg.flags.rst() || conn.finished() {
            // Bytes still held behind a capture hole are framed first (at their own times);
            // then the session learns the connection closed (an anonymous session's
            // requests can no longer be answered: they are accounted for).
            conn.flush(reassembly, &mut sink);
            conn.close(&mut sink);
            if let Some(b) = sink.router.breakdown.as_mut() {
                b.connection_closed(&key, seg.ts_ns);
            }
            connections.remove(&key);
            closed.insert(key, seg.ts_ns);
        }
        self.housekeeping();
    }

    /// Gives up the holes acknowledged more than the reorder window before `now_ns`.
    #[cold]
    fn give_up_acked_holes(&mut self) {
        let now_ns = self.now_ns;
        let Parts {
            connections,
            acked_holes,
            reassembly,
            mut sink,
            ..
        } = self.parts();
        let due = acked_holes.take_due(now_ns);
        for key in &due {
            if let Some(conn) = connections.get_mut(key) {
                conn.give_up_acked(now_ns, reassembly, &mut sink, acked_holes);
            }
        }
        acked_holes.give_back(due);
    }

    /// The connections whose wait for their TLS key ended by now: a last look, else
    /// `no_key` (a connection keyed or gone meanwhile is skipped).
    #[cold]
    fn key_waits_due(&mut self) {
        let now_ns = self.now_ns;
        let Parts {
            connections,
            mut sink,
            ..
        } = self.parts();
        let due = sink.held_for_key.take_due(now_ns);
        for key in &due {
            if let Some(conn) = connections.get_mut(key) {
                conn.key_wait_due(now_ns, &mut sink);
            }
        }
        sink.held_for_key.give_back(due);
    }

    /// Per-segment upkeep: breakdown expiry, idle sweep, connection-table bound.
    fn housekeeping(&mut self) {
        if let Some(b) = self.breakdown.as_mut() {
            b.expire(self.now_ns);
        }
        // A worker of a sharded run sweeps when the reader says the one pipeline would
        // (`shard_sweep`): its own clock only moves with its own connections.
        if self.shard.is_none() && self.now_ns.saturating_sub(self.last_sweep_ns) > 1_000_000_000 {
            self.sweep_idle();
        }
        if self.connections.len() > self.config.max_connections {
            self.shed_connections();
        }
    }

    /// Forgets connections idle for longer than the configured limit.
    fn sweep_idle(&mut self) {
        self.last_sweep_ns = self.now_ns;
        self.closed
            .expire(self.now_ns.saturating_sub(CLOSED_CONNECTION_MEMORY_NS));
        let cutoff = self.now_ns.saturating_sub(self.config.idle_connection_ns);
        self.forget_connections(|c| c.last_seen_ns < cutoff);
    }

    /// Drops the least recently active half of the connections (O(n), once per
    /// `max_connections / 2` new ones, so O(1) amortised).
    fn shed_connections(&mut self) {
        let mut last_seen: Vec<u64> = self.connections.values().map(|c| c.last_seen_ns).collect();
        let mid = last_seen.len() / 2;
        let (_, &mut median, _) = last_seen.select_nth_unstable(mid);
        self.shed_connections += self.forget_connections(|c| c.last_seen_ns <= median);
    }

    /// Splits the pipeline into its connections, the reassembly counters and the sink their
    /// messages go to, so connections can be flushed while the sink routes what they held.
    fn parts(&mut self) -> Parts<'_> {
        let Pipeline {
            connections,
            connections_opened,
            closed,
            acked_holes,
            held_for_key,
            next_session,
            shard,
            session_layer,
            correlator,
            stats,
            framing,
            binary,
            reassembly,
            tls,
            config,
            observer,
            breakdown,
            hops,
            points,
            forward,
            slots,
            unix_offset_ns,
            observed_key,
            ..
        } = self;
        Parts {
            connections,
            connections_opened,
            closed,
            acked_holes,
            reassembly,
            limits: &config.reassembly,
            slots,
            sink: MessageSink {
                framing,
                tls_keys: config.tls_keys.as_deref(),
                tls_undecrypted: config.tls_undecrypted.as_deref(),
                tls,
                held_for_key,
                forward: forward.as_mut(),
                protocols: &config.protocols,
                router: Router {
                    key: &config.key,
                    correlator,
                    stats,
                    observer,
                    observed_key,
                    breakdown,
                    hops,
                    points,
                    layer: session_layer,
                    next_session,
                    unix_offset_ns: *unix_offset_ns,
                    shard,
                    binary,
                },
            },
        }
    }

    /// Forgets the connections `forget` picks: what they held behind capture holes is framed
    /// first (at its own times), then their pending requests are accounted as closed.
    /// Returns how many went.
    fn forget_connections(&mut self, mut forget: impl FnMut(&Connection) -> bool) -> u64 {
        let now_ns = self.now_ns;
        let Parts {
            connections,
            reassembly,
            mut sink,
            ..
        } = self.parts();
        let mut gone = 0;
        for (_, mut conn) in connections.extract_if(|_, c| forget(c)) {
            conn.flush(reassembly, &mut sink);
            conn.close(&mut sink);
            if let Some(b) = sink.router.breakdown.as_mut() {
                b.connection_closed(&conn.key, now_ns);
            }
            gone += 1;
        }
        gone
    }

    /// Advances time without a segment (live: the clock moves while the wire is quiet):
    /// expires pending requests and emits the interval reports that are due.
    pub fn advance_to(
        &mut self,
        now_ns: u64,
        source: &[Counter],
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        self.now_ns = self.now_ns.max(now_ns);
        if self.acked_holes.due(self.now_ns) {
            self.give_up_acked_holes();
        }
        if self.held_for_key.due(self.now_ns) {
            self.key_waits_due();
        }
        self.correlator.expire(self.now_ns);
        if let Some(b) = self.breakdown.as_mut() {
            b.expire(self.now_ns);
        }
        if let Some(h) = self.hops.as_mut() {
            h.expire(self.now_ns, &mut self.stats);
        }
        if self.record_sink.is_some() {
            self.hand_records();
            if let Some(sink) = self.record_sink.as_mut() {
                sink.idle();
            }
        }
        self.report_due_intervals(self.now_ns, source, reporter)
    }

    /// Whether an interval report is due at `now_ns` (so a driver fetches its source's
    /// counters only then).
    #[inline]
    pub fn interval_due(&self, now_ns: u64) -> bool {
        self.interval_clock.due(now_ns)
    }

    /// Emits the interval report if `now_ns` has passed the end of the current interval.
    /// Sources call this before feeding a segment with that timestamp.
    pub fn report_due_intervals(
        &mut self,
        now_ns: u64,
        source: &[Counter],
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        match self.next_due_interval(now_ns) {
            Some((start, end)) => self.emit_interval(start, end, source, reporter),
            None => Ok(()),
        }
    }

    /// The interval that `now_ns` ends, if any ([`IntervalClock::next_due`]).
    fn next_due_interval(&mut self, now_ns: u64) -> Option<(u64, u64)> {
        self.interval_clock.next_due(now_ns)
    }

    fn emit_interval(
        &mut self,
        start_ns: u64,
        end_ns: u64,
        source: &[Counter],
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        let counters = self.counters();
        self.stats.clock = self.points.as_ref().map(PointJoiner::figures);
        let span = TimeSpan {
            start_ns,
            end_ns,
            unix_offset_ns: self.unix_offset_ns,
            timestamp_source: self.timestamp_source,
        };
        let source = self.with_record_counters(source);
        report_interval(
            &mut self.stats,
            counters,
            &mut self.interval_start_counters,
            span,
            &source,
            reporter,
        )
    }

    /// From the first timestamp seen to the latest.
    fn run_span(&self) -> TimeSpan {
        TimeSpan {
            start_ns: self.first_ts_ns.unwrap_or(self.now_ns),
            end_ns: self.now_ns,
            unix_offset_ns: self.unix_offset_ns,
            timestamp_source: self.timestamp_source,
        }
    }

    /// Ends the run: delivers data held behind holes, reports the last partial interval and
    /// the cumulative summary. `source` holds the source's own counters (capture or kernel).
    pub fn finish(&mut self, source: &[Counter], reporter: &mut dyn Reporter) -> io::Result<()> {
        self.finish_incomplete(source, None, reporter)
    }

    /// [`Pipeline::finish`] of a run whose source was not read to its end (`incomplete`:
    /// why — a damaged capture, a stop before the end): the summary says so.
    pub fn finish_incomplete(
        &mut self,
        source: &[Counter],
        incomplete: Option<&str>,
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        self.flush_streams();
        if let Some(b) = self.breakdown.as_mut() {
            b.finish_run();
        }
        self.report_end(source, incomplete, reporter)
    }

    /// The end's reports, once every stream was flushed: the last partial interval and
    /// the summary.
    fn report_end(
        &mut self,
        source: &[Counter],
        incomplete: Option<&str>,
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        let (end, counters) = (self.run_end(), self.counters());
        self.stats.links = self.hops.as_ref().map(HopLinker::figures);
        self.stats.clock = self.points.as_ref().map(PointJoiner::figures);
        let source = self.with_record_counters(source);
        let source = &source[..];
        report_end(
            &mut self.stats,
            counters,
            &mut self.interval_start_counters,
            &end,
            source,
            incomplete,
            self.config.tls_undecrypted.as_deref(),
            &self.config.feeds,
            reporter,
        )
    }

    /// Where the run stands, for its last reports.
    pub(crate) fn run_end(&self) -> RunEnd {
        RunEnd {
            interval_ns: self.config.interval_ns,
            interval_start_ns: self.interval_clock.start_ns(),
            first_ts_ns: self.first_ts_ns,
            now_ns: self.now_ns,
            unix_offset_ns: self.unix_offset_ns,
            timestamp_source: self.timestamp_source,
        }
    }

    /// Builds the cumulative summary now (live: the SPACE key) without ending the run.
    pub fn summary_now(
        &mut self,
        source: &[Counter],
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        let counters = self.counters();
        self.stats.links = self.hops.as_ref().map(HopLinker::figures);
        self.stats.clock = self.points.as_ref().map(PointJoiner::figures);
        self.stats.refresh_views();
        let source = self.with_record_counters(source);
        let mut summary = SummaryReport::new(&self.stats, counters, &source, self.run_span());
        summary.nothing_seen = self.first_ts_ns.is_none();
        reporter.summary(&summary)
    }

    /// Clears all recorded latencies and counters of the statistics (live: the `r` key).
    pub fn reset_stats(&mut self) {
        self.stats.reset_all();
    }

    fn flush_streams(&mut self) {
        let Parts {
            connections,
            reassembly,
            mut sink,
            ..
        } = self.parts();
        for conn in connections.values_mut() {
            conn.flush(reassembly, &mut sink);
        }
        self.end_of_input();
    }

    /// Every message is in: the orders still waiting stay unanswered, the producers end,
    /// and the records' last rows go to the sink, which is ended (one pipeline, and stage B
    /// of two).
    fn end_of_input(&mut self) {
        self.correlator.end_of_input();
        if let Some(h) = self.hops.as_mut() {
            h.finish(&mut self.stats);
        }
        if let Some(p) = self.points.as_mut() {
            p.finish();
        }
        if self.record_sink.is_some() {
            self.correlator.close_records();
            self.hand_records();
            if let Some(sink) = self.record_sink.as_mut() {
                sink.end();
            }
        }
    }
}

/// The pipeline split into what the connection side and the routing side each borrow.
struct Parts<'p> {
    connections: &'p mut HashMap<ConnectionKey, Connection>,
    connections_opened: &'p mut u64,
    closed: &'p mut ClosedConnections,
    acked_holes: &'p mut Deadlines,
    reassembly: &'p mut ReassemblyCounters,
    limits: &'p ReassemblyLimits,
    /// Stage B of a two-stage run: bindings and keys by slot.
    slots: &'p mut Vec<Option<Slot>>,
    sink: MessageSink<'p>,
}

#[cfg(test)]
mod breakdown_tests;
#[cfg(test)]
mod tls_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlate::CorrelatorLimits;
    use crate::correlate::Stage;
    use crate::fix::encode::test_message as fix;
    use crate::report::{IntervalReport, SummaryReport};
    use crate::segment::{Endpoint, FlowKey, TcpFlags};
    use crate::stats::Distribution;

    #[derive(Default)]
    struct Collect {
        intervals: Vec<(u64, u64, [u64; 4])>,
        summary: Option<([Distribution; 4], Counters)>,
    }

    impl Reporter for Collect {
        fn interval(&mut self, r: &IntervalReport<'_>) -> io::Result<()> {
            self.intervals
                .push((r.start_ns, r.end_ns, r.stages.map(|s| s.count)));
            Ok(())
        }
        fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
            self.summary = Some((r.stages.map(|s| s.dist), r.counters));
            Ok(())
        }
    }

    fn ep(port: u16) -> Endpoint {
        Endpoint {
            addr: "10.0.0.1".parse().unwrap(),
            port,
        }
    }

    struct Conn {
        client: Endpoint,
        server: Endpoint,
        cseq: u32,
        sseq: u32,
    }

    /// A client at port 40000 talking to the acceptor at 9878, both sequences from 1.
    fn conn() -> Conn {
        Conn {
            client: ep(40000),
            server: ep(9878),
            cseq: 1,
            sseq: 1,
        }
    }

    impl Conn {
        fn seg<'a>(&mut self, dir: Direction, payload: &'a [u8], ts: u64) -> Segment<'a> {
            let (flow, seq) = match dir {
                Direction::Request => (
                    FlowKey {
                        src: self.client,
                        dst: self.server,
                    },
                    &mut self.cseq,
                ),
                Direction::Response => (
                    FlowKey {
                        src: self.server,
                        dst: self.client,
                    },
                    &mut self.sseq,
                ),
            };
            let s = Segment {
                ts_ns: ts,
                flow,
                direction: dir,
                seq: *seq,
                ack: 0,
                flags: TcpFlags(TcpFlags::PSH),
                payload,
                missing_tail: 0,
            };
            *seq = seq.wrapping_add(payload.len() as u32);
            s
        }
    }

    #[test]
    fn request_last_byte_to_response_first_byte() {
        let mut p = Pipeline::new(PipelineConfig::default());
        let mut c = Conn {
            client: ep(40000),
            server: ep(9878),
            cseq: 1000,
            sseq: 5000,
        };
        let order = fix(&[(35, "D"), (49, "C1"), (56, "EX"), (11, "ORD1")]);
        let ack = fix(&[(35, "8"), (11, "ORD1"), (150, "0"), (39, "0")]);
        let fill = fix(&[(35, "8"), (11, "ORD1"), (150, "F"), (39, "2")]);
        let mut both = ack.clone();
        both.extend_from_slice(&fill);
        // The order arrives in two segments; ack and fill together in one response segment
        // split in the middle of the fill.
        let cut = both.len() - 10;
        for s in [
            c.seg(Direction::Request, &order[..7], 1_000),
            c.seg(Direction::Request, &order[7..], 2_000),
            c.seg(Direction::Response, &both[..cut], 9_000),
            c.seg(Direction::Response, &both[cut..], 15_000),
        ] {
            p.on_segment(&s);
        }
        let mut r = Collect::default();
        p.finish(&[], &mut r).unwrap();
        let (stages, counters) = r.summary.unwrap();
        assert_eq!(stages[Stage::FirstResponse.index()].max_ns, 7_000);
        assert_eq!(stages[Stage::Ack.index()].max_ns, 7_000);
        // The fill's first byte travelled in the 9 µs segment.
        assert_eq!(stages[Stage::Fill.index()].max_ns, 7_000);
        assert_eq!(stages[Stage::AckToFill.index()].count, 1);
        assert_eq!(counters.correlation.matched, 1);
        assert_eq!(counters.framing.messages, 3);
    }

    /// The capture lost the ack (a hole in the responses, given up when the capture ends):
    /// the fill seen after it is not ORD1's first response, ack or fill latency. ORD2,
    /// sent after the fill, is measured as usual.
    #[test]
    fn a_response_lost_in_a_capture_hole_is_not_replaced_by_a_later_one() {
        let mut p = Pipeline::new(PipelineConfig::default());
        let mut c = conn();
        let order1 = fix(&[(35, "D"), (49, "C1"), (56, "EX"), (11, "ORD1")]);
        let ack1 = fix(&[(35, "8"), (11, "ORD1"), (150, "0"), (39, "0")]);
        let fill1 = fix(&[(35, "8"), (11, "ORD1"), (150, "F"), (39, "2")]);
        let order2 = fix(&[(35, "D"), (49, "C1"), (56, "EX"), (11, "ORD2")]);
        let ack2 = fix(&[(35, "8"), (11, "ORD2"), (150, "0"), (39, "0")]);
        let heartbeat = fix(&[(35, "0"), (49, "EX"), (56, "C1")]);
        p.on_segment(&c.seg(Direction::Response, &heartbeat, 500));
        p.on_segment(&c.seg(Direction::Request, &order1, 1_000));
        let _lost = c.seg(Direction::Response, &ack1, 2_000);
        for s in [
            c.seg(Direction::Response, &fill1, 9_000),
            c.seg(Direction::Request, &order2, 10_000),
            c.seg(Direction::Response, &ack2, 13_000),
        ] {
            p.on_segment(&s);
        }
        let mut r = Collect::default();
        p.finish(&[], &mut r).unwrap();
        let (stages, counters) = r.summary.unwrap();
        let k = counters.correlation;
        assert_eq!(counters.reassembly.gaps, 1);
        assert_eq!((k.matched, k.answered_after_capture_hole), (1, 1), "{k:?}");
        let first = stages[Stage::FirstResponse.index()];
        assert_eq!((first.count, first.max_ns), (1, 3_000), "only ORD2's");
        assert_eq!(stages[Stage::Fill.index()].count, 0);
        assert_eq!(
            k.requests,
            k.matched + k.answered_after_capture_hole + counters.unanswered
        );
    }

    #[test]
    fn intervals_follow_capture_time() {
        let mut p = Pipeline::new(PipelineConfig {
            interval_ns: 1_000,
            ..PipelineConfig::default()
        });
        let mut c = conn();
        let mut r = Collect::default();
        for i in 0..5u64 {
            let id = format!("O{i}");
            let order = fix(&[(35, "D"), (11, &id)]);
            let ack = fix(&[(35, "8"), (11, &id), (150, "0"), (39, "0")]);
            let t = i * 600;
            let s = c.seg(Direction::Request, &order, t);
            p.report_due_intervals(t, &[], &mut r).unwrap();
            p.on_segment(&s);
            let s = c.seg(Direction::Response, &ack, t + 10);
            p.report_due_intervals(t + 10, &[], &mut r).unwrap();
            p.on_segment(&s);
        }
        p.finish(&[], &mut r).unwrap();
        let firsts: Vec<_> = r.intervals.iter().map(|i| (i.0, i.2[0])).collect();
        assert_eq!(firsts, vec![(0, 2), (1000, 2), (2000, 1)]);
    }

    /// Regression: the last response stamped exactly at the start of an interval was in
    /// the summary but in no interval (no final interval was emitted), so an HdrHistogram
    /// log missed it.
    #[test]
    fn data_at_the_last_interval_s_start_still_gets_an_interval() {
        let mut p = Pipeline::new(PipelineConfig {
            interval_ns: 1_000,
            ..PipelineConfig::default()
        });
        let mut c = conn();
        let mut r = Collect::default();
        let order = fix(&[(35, "D"), (11, "O1")]);
        let ack = fix(&[(35, "8"), (11, "O1"), (150, "0"), (39, "0")]);
        for (t, dir, bytes) in [
            (0, Direction::Request, &order),
            (1_000, Direction::Response, &ack),
        ] {
            let s = c.seg(dir, bytes, t);
            p.report_due_intervals(t, &[], &mut r).unwrap();
            p.on_segment(&s);
        }
        p.finish(&[], &mut r).unwrap();
        let (stages, _) = r.summary.unwrap();
        let in_intervals = r.intervals.iter().fold([0u64; 4], |mut acc, i| {
            for (a, c) in acc.iter_mut().zip(i.2) {
                *a += c;
            }
            acc
        });
        assert_eq!(in_intervals, stages.map(|d| d.count), "{:?}", r.intervals);
        assert_eq!(stages[Stage::FirstResponse.index()].count, 1);
        let last = r.intervals.last().unwrap();
        assert_eq!((last.0, last.1), (1_000, 1_000), "the final interval");
    }

    #[test]
    fn port_reuse_starts_a_new_session() {
        let mut p = Pipeline::new(PipelineConfig::default());
        let mut c = conn();
        let order = fix(&[(35, "D"), (11, "SAME")]);
        let s = c.seg(Direction::Request, &order, 10);
        p.on_segment(&s);
        // New connection on the same 4-tuple: SYN with another ISN, then the same ClOrdID.
        let syn = Segment {
            flags: TcpFlags(TcpFlags::SYN),
            seq: 777,
            payload: &[],
            ..c.seg(Direction::Request, &[], 20)
        };
        p.on_segment(&syn);
        c.cseq = 778;
        let s = c.seg(Direction::Request, &order, 30);
        p.on_segment(&s);
        assert_eq!(p.counters().correlation.duplicate_requests, 0);
        assert_eq!(p.counters().connections, 2);
    }

    /// Regression (#21): after both FINs the last ACK (and a retransmitted FIN or an RST)
    /// opened a new connection and a phantom `?` session.
    #[test]
    fn a_closed_connection_s_trailing_segments_open_nothing() {
        let mut p = Pipeline::new(PipelineConfig::default());
        let mut c = conn();
        let order = fix(&[(35, "D"), (49, "C"), (56, "X"), (11, "A")]);
        let s = c.seg(Direction::Request, &order, 10);
        p.on_segment(&s);
        let flags = |f| TcpFlags(f | TcpFlags::ACK);
        let fin_c = Segment {
            flags: flags(TcpFlags::FIN),
            ..c.seg(Direction::Request, &[], 20)
        };
        let fin_s = Segment {
            flags: flags(TcpFlags::FIN),
            ..c.seg(Direction::Response, &[], 21)
        };
        p.on_segment(&fin_c);
        p.on_segment(&fin_s);
        assert_eq!(p.counters().open_connections, 0, "closed by both FINs");
        for (dir, f, t) in [
            (Direction::Request, 0, 22),
            (Direction::Request, TcpFlags::FIN, 23),
            (Direction::Response, TcpFlags::RST, 24),
        ] {
            let s = Segment {
                flags: flags(f),
                ..c.seg(dir, &[], t)
            };
            p.on_segment(&s);
        }
        // Even a late retransmission of the order's bytes opens nothing.
        c.cseq = 1;
        let s = c.seg(Direction::Request, &order, 30);
        p.on_segment(&s);
        let k = p.counters();
        assert_eq!((k.connections, k.open_connections), (1, 0));
        assert_eq!(k.stray_segments, 4);
        assert_eq!(p.stats().sessions().len(), 1);
        assert_eq!(k.correlation.requests, 1);
        // A new SYN on the same 4-tuple is a new connection.
        let syn = Segment {
            flags: TcpFlags(TcpFlags::SYN),
            seq: 900,
            ..c.seg(Direction::Request, &[], 40)
        };
        p.on_segment(&syn);
        assert_eq!(p.counters().connections, 2);
    }

    /// An order (and its ack at `answered`), as (time, direction, bytes) to be sorted by
    /// time and cut into segments in that order (each direction's sequence numbers follow
    /// its own time order, as on the wire).
    fn order_and_ack(id: &str, sent: u64, answered: Option<u64>) -> Vec<(u64, Direction, Vec<u8>)> {
        let mut v = vec![(sent, Direction::Request, fix(&[(35, "D"), (11, id)]))];
        if let Some(at) = answered {
            let ack = fix(&[(35, "8"), (11, id), (150, "0"), (39, "0")]);
            v.push((at, Direction::Response, ack));
        }
        v
    }

    /// Requests answered seconds after `-t` are in the percentiles and the max, counted
    /// `timed_out` when `-t` passed and `late` when answered; every request is accounted for.
    #[test]
    fn a_slow_order_never_vanishes_from_the_percentiles() {
        let mut p = Pipeline::new(PipelineConfig {
            interval_ns: 1_000_000_000,
            ..PipelineConfig::default() // -t 0.5 s, -x 10 s
        });
        let mut c = conn();
        let mut msgs = Vec::new();
        // 997 orders answered in 50 µs; 3 held for 2 s, 3 s and 12 s (above -x).
        for i in 0..1000u64 {
            let sent = i * 1_000_000;
            let hold = match i {
                10 => 2_000_000_000,
                20 => 3_000_000_000,
                30 => 12_000_000_000,
                _ => 50_000,
            };
            msgs.extend(order_and_ack(&format!("O{i}"), sent, Some(sent + hold)));
        }
        // One never answered.
        msgs.extend(order_and_ack("LOST", 5_000_500, None));
        msgs.sort_by_key(|m| m.0);
        let mut r = Collect::default();
        let mut timed_out_seen = Vec::new();
        for (t, direction, bytes) in &msgs {
            let s = c.seg(*direction, bytes, *t);
            p.report_due_intervals(*t, &[], &mut r).unwrap();
            p.on_segment(&s);
            timed_out_seen.push((*t, p.counters().correlation.timed_out));
        }
        // -t is an alert: the 3 held orders and the lost one count as timed out once 0.5 s
        // passed for them, long before any answer.
        let at = |t: u64| timed_out_seen.iter().rev().find(|x| x.0 <= t).map(|x| x.1);
        assert_eq!(at(900_000_000), Some(4));
        p.finish(&[], &mut r).unwrap();
        let (stages, counters) = r.summary.unwrap();
        let first = &stages[Stage::FirstResponse.index()];
        assert_eq!(
            first.count, 1000,
            "every answered order is in the distribution"
        );
        assert_eq!(first.max_ns, 12_000_000_000, "the max is the slowest order");
        assert_eq!(first.over_range, 1);
        // 1000 values: p99.9 is the 999th (3 s, within the histogram's 0.1%), p99.99 ranks
        // at the 12 s one above range: reported as such, never as 10 s.
        let p999 = first.percentiles_ns[3].unwrap() as f64;
        assert!((p999 - 3e9).abs() / 3e9 < 0.001, "p99.9 {p999}");
        assert_eq!(first.percentiles_ns[4], None);
        let k = &counters.correlation;
        assert_eq!((k.matched, k.late, k.timed_out), (1000, 3, 4));
        assert_eq!((counters.unanswered, counters.unanswered_pending), (1, 1));
        assert_eq!(k.unmatched_responses, 0);
        assert_eq!(k.requests, k.matched + counters.unanswered);
    }

    #[test]
    fn eviction_and_closed_connections_are_accounted_never_silent() {
        let mut p = Pipeline::new(PipelineConfig {
            correlation: CorrelatorLimits {
                max_pending: 2,
                ttl_ns: 500_000_000,
            },
            ..PipelineConfig::default()
        });
        let mut c = conn();
        for (t, direction, bytes) in order_and_ack("A", 0, None)
            .into_iter()
            .chain(order_and_ack("B", 1, None))
            .chain(order_and_ack("C", 2, None)) // evicts A
            .chain(order_and_ack("A2", 3, Some(10)))
        // evicts B
        {
            let s = c.seg(direction, &bytes, t);
            p.on_segment(&s);
        }
        let k = p.counters();
        assert_eq!(k.correlation.unanswered_evicted, 2);
        assert_eq!(k.correlation.evicted, 2);
        // The client resets the connection: C can never be answered.
        let rst = Segment {
            flags: TcpFlags(TcpFlags::RST),
            ..c.seg(Direction::Request, &[], 20)
        };
        p.on_segment(&rst);
        let k = p.counters();
        assert_eq!(k.correlation.unanswered_closed, 1);
        assert_eq!(k.pending, 0);
        assert_eq!(
            (k.correlation.requests, k.correlation.matched, k.unanswered),
            (4, 1, 3)
        );
    }
}

#[cfg(test)]
pub(super) mod robustness {
    use super::*;
    use crate::correlate::CorrelatorLimits;
    use crate::fix::encode::FixEncoder;
    use crate::report::{IntervalReport, SummaryReport};
    use crate::segment::{Endpoint, FlowKey, TcpFlags};

    pub(super) struct Discard;
    impl Reporter for Discard {
        fn interval(&mut self, _: &IntervalReport<'_>) -> io::Result<()> {
            Ok(())
        }
        fn summary(&mut self, r: &SummaryReport<'_>) -> io::Result<()> {
            // Whatever came in, the figures stay self-consistent.
            for s in &r.stages {
                if s.dist.count > 0 {
                    assert!(s.dist.min_ns <= s.dist.max_ns);
                    // Values rise; once a rank is above range, every later one is too.
                    let p = s.dist.percentiles_ns;
                    assert!(p.windows(2).all(|w| match (w[0], w[1]) {
                        (Some(a), Some(b)) => a <= b,
                        (None, b) => b.is_none(),
                        (Some(_), None) => true,
                    }));
                }
            }
            // Every request is accounted for, whatever came in.
            let c = &r.counters;
            let k = &c.correlation;
            assert_eq!(
                k.requests,
                k.matched
                    + k.response_before_request
                    + k.answered_after_capture_hole
                    + c.unanswered
            );
            assert!(c.correlation.late <= c.correlation.timed_out);
            Ok(())
        }
    }

    /// xorshift64*: deterministic, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// The pipeline of the random tests: tiny intervals, `-t`, hole timeout and limits,
    /// so every path (intervals, expiry, eviction, holes given up) runs often.
    pub(super) fn random_config() -> PipelineConfig {
        PipelineConfig {
            interval_ns: 1_000,
            correlation: CorrelatorLimits {
                max_pending: 64,
                ttl_ns: 5_000,
            },
            reassembly: ReassemblyLimits {
                max_buffered_bytes: 4096,
                max_buffered_segments: 16,
                hole_timeout_ns: 10_000,
            },
            // Latencies above the range too (`over_range`, a counter of the statistics).
            highest_ns: 4_000,
            ..PipelineConfig::default()
        }
    }

    /// `n` random segments (seeded) — valid FIX cut anywhere, garbage, wild sequence
    /// numbers, every flag combination, snaplen cuts — on 4 connections, to `each`.
    pub(super) fn random_segments(seed: u64, n: usize, mut each: impl FnMut(&Segment<'_>)) {
        let mut rng = Rng(seed);
        let mut enc = FixEncoder::new();
        let mut seqs = [0u32; 8];
        let mut msg_seqs = [0u32; 4];
        let mut ts = 0u64;
        for _ in 0..n {
            let conn = rng.below(4) as usize;
            let request = rng.below(2) == 0;
            let client = Endpoint {
                addr: "10.0.0.2".parse().unwrap(),
                port: 40_000 + conn as u16,
            };
            // Two acceptor ports: a `--leg` run sees a router's two sides.
            let server = Endpoint {
                addr: "10.0.0.1".parse().unwrap(),
                port: 9878 + (conn % 2) as u16,
            };
            let mut payload = Vec::new();
            match rng.below(4) {
                0 => {
                    let id = format!("ID{}", rng.below(50));
                    let t = [b"D", b"8", b"9", b"F", b"0"][rng.below(5) as usize];
                    let m = enc.start(t);
                    if conn < 2 {
                        // Named sessions with sequence numbers: capture holes and
                        // closed connections matter to the session layer.
                        let side = conn * 2 + request as usize;
                        msg_seqs[side] += 1;
                        let (sender, target) = if request { ("C", "X") } else { ("X", "C") };
                        m.field_str(49, sender)
                            .field_str(56, target)
                            .field_str(34, &msg_seqs[side].to_string());
                    }
                    m.field_str(11, &id)
                        .field_str(150, ["0", "F", "8", "2"][rng.below(4) as usize])
                        .field_str(39, ["0", "1", "2", "4"][rng.below(4) as usize])
                        .field_str(54, "1");
                    // A router's link tag now and then (`--leg` runs link by it).
                    if rng.below(2) == 0 {
                        m.field_str(526, &format!("ID{}", rng.below(50)));
                    }
                    enc.finish(b"FIX.4.4", &mut payload);
                    let cut = rng.below(payload.len() as u64 + 1) as usize;
                    if rng.below(2) == 0 {
                        payload.truncate(cut);
                    } else {
                        payload.drain(..cut);
                    }
                }
                1 => payload.extend((0..rng.below(300)).map(|_| rng.next() as u8)),
                2 => payload.extend_from_slice(b"8=FIX.4.4\x019=99999\x0135=D\x01"),
                _ => {}
            }
            let slot = conn * 2 + request as usize;
            let seq = match rng.below(10) {
                0 => rng.next() as u32,
                1 => seqs[slot].wrapping_sub(rng.below(100) as u32),
                2 => seqs[slot].wrapping_add(rng.below(100) as u32),
                _ => seqs[slot],
            };
            seqs[slot] = seq.wrapping_add(payload.len() as u32);
            // A third of the segments at the same nanosecond as the one before.
            ts += rng.below(3_000) * u64::from(rng.below(3) != 0);
            let (flow, direction) = if request {
                (
                    FlowKey {
                        src: client,
                        dst: server,
                    },
                    Direction::Request,
                )
            } else {
                (
                    FlowKey {
                        src: server,
                        dst: client,
                    },
                    Direction::Response,
                )
            };
            each(&Segment {
                ts_ns: ts,
                flow,
                direction,
                seq,
                ack: rng.next() as u32,
                flags: TcpFlags(rng.next() as u8),
                payload: &payload,
                missing_tail: if rng.below(20) == 0 {
                    rng.below(2000) as u32
                } else {
                    0
                },
            });
        }
    }

    /// With `--leg` (the two random ports as a router's two sides), random traffic never
    /// panics, never makes a negative hop, and every parent and child lands in one count.
    #[test]
    fn random_segments_with_legs_keep_the_ledger() {
        let mut config = random_config();
        config.hops = Some(crate::hops::HopConfig {
            legs: crate::hops::Legs(vec![
                "up=9878".parse().unwrap(),
                "down=9879".parse().unwrap(),
            ]),
            link: "11,526=11".parse().unwrap(),
            // The whole stream: every child may name any earlier parent.
            window_ns: 1 << 40,
            answer_wait_ns: 5_000,
        });
        let mut p = Pipeline::new(config);
        let mut r = Discard;
        random_segments(0x5851_f42d_4c95_7f2d, 50_000, |seg| {
            p.report_due_intervals(seg.ts_ns, &[], &mut r).unwrap();
            p.on_segment(seg);
        });
        p.finish(&[], &mut r).unwrap();
        let h = p.counters().hops.expect("hop counters");
        assert!(h.parents > 0 && h.children > 0, "{h:?}");
        assert_eq!(
            h.parents,
            h.linked + h.unlinked_parent + h.ambiguous,
            "{h:?}"
        );
        assert_eq!(
            h.children,
            h.linked_children + h.unlinked_child + h.ambiguous_child + h.late_link,
            "{h:?}"
        );
        for stage in crate::correlate::Stage::HOPS {
            let max = p.stats().cumulative(stage).max_ns();
            assert!(max < 1 << 40, "{stage:?}: {max}");
        }
    }

    /// Random segments never panic and never produce inconsistent figures; with records
    /// on, every request has exactly one record and the records' outcomes add up to the
    /// counters.
    #[test]
    fn random_segments_never_panic() {
        use std::cell::RefCell;
        use std::collections::HashMap;
        use std::rc::Rc;
        struct Rows(Rc<RefCell<HashMap<&'static str, u64>>>);
        impl RecordSink for Rows {
            fn order(&mut self, row: &OrderRow<'_>) {
                *self
                    .0
                    .borrow_mut()
                    .entry(row.record.outcome.name())
                    .or_default() += 1;
            }
        }
        let rows = Rc::new(RefCell::new(HashMap::new()));
        let mut p = Pipeline::new(random_config());
        p.set_record_sink(Box::new(Rows(Rc::clone(&rows))));
        let mut r = Discard;
        random_segments(0x9e37_79b9_7f4a_7c15, 50_000, |seg| {
            p.report_due_intervals(seg.ts_ns, &[], &mut r).unwrap();
            p.on_segment(seg);
        });
        p.finish(&[], &mut r).unwrap();
        let c = p.counters();
        assert!(c.framing.messages > 0);
        let rows = rows.borrow();
        let n = |names: &[&str]| {
            names
                .iter()
                .map(|k| rows.get(k).copied().unwrap_or(0))
                .sum::<u64>()
        };
        let k = &c.correlation;
        assert!(k.requests > 0, "the random traffic has requests");
        assert_eq!(rows.values().sum::<u64>(), k.requests, "{rows:?} {k:?}");
        assert_eq!(
            n(&["matched", "late", "rejected"]),
            k.matched,
            "{rows:?} {k:?}"
        );
        assert_eq!(n(&["untracked"]), k.untracked_requests);
        assert_eq!(n(&["evicted"]), k.unanswered_evicted);
        assert_eq!(n(&["closed"]), k.unanswered_closed);
        assert_eq!(n(&["unanswered"]), c.unanswered_pending);
        assert_eq!(n(&["response_before_request"]), k.response_before_request);
        assert_eq!(
            n(&["answered_after_capture_hole"]),
            k.answered_after_capture_hole
        );
    }

    #[test]
    fn connection_table_is_bounded() {
        let mut p = Pipeline::new(PipelineConfig {
            max_connections: 100,
            ..PipelineConfig::default()
        });
        let server = Endpoint {
            addr: "10.0.0.1".parse().unwrap(),
            port: 9878,
        };
        for i in 0..10_000u32 {
            let client = Endpoint {
                addr: "10.0.0.2".parse().unwrap(),
                port: (i % 60_000) as u16 + 1,
            };
            p.on_segment(&Segment {
                ts_ns: i as u64,
                flow: FlowKey {
                    src: client,
                    dst: server,
                },
                direction: Direction::Request,
                seq: i,
                ack: 0,
                flags: TcpFlags(TcpFlags::SYN),
                payload: &[],
                missing_tail: 0,
            });
            assert!(p.connections.len() <= 100);
        }
        assert!(p.counters().shed_connections >= 9_800);
    }
}
