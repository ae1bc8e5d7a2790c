//! The connection table's entries: each TCP connection's two half-streams (reassembly and
//! framing per direction), its session binding, and the 4-tuples closed recently.

use hashbrown::HashMap;

use super::routing::{MessageSink, TlsInput};
use crate::fix::framing::StreamFramer;
use fixscope_protocol::ProtocolName;

use super::binary::BinaryConnection;
use crate::reassembly::{ReassemblyCounters, StreamReassembler};
use crate::segment::{ConnectionKey, Direction};
use crate::session::Binding;
use crate::tls::TlsConnection;

use super::deadlines::Deadlines;

#[derive(Default)]
pub(crate) struct HalfStream {
    pub(crate) reassembler: StreamReassembler,
    pub(crate) framer: StreamFramer,
    /// Sequence number of this direction's SYN, to tell a retransmitted SYN from port reuse.
    pub(crate) syn_seq: Option<u32>,
}

pub(crate) struct Connection {
    /// The FIX session, bound at the connection's first message (one pipeline; a
    /// two-stage run's stage B keeps it by `slot`).
    pub(crate) binding: Option<Binding>,
    pub(crate) key: ConnectionKey,
    /// Stage A of a two-stage run: the connection's id in the events to stage B.
    pub(crate) slot: u32,
    pub(crate) request: HalfStream,
    pub(crate) response: HalfStream,
    pub(crate) last_seen_ns: u64,
    pub(crate) payload_seen: bool,
    /// `--tls-keylog`: the connection's decryption (plain FIX passes through it).
    pub(crate) tls: Option<Box<TlsConnection>>,
    /// A binary order protocol's framing and order layer (`--protocol`): `None` for FIX.
    pub(crate) binary: Option<Box<BinaryConnection>>,
}

impl Connection {
    pub(crate) fn new(
        key: ConnectionKey,
        now_ns: u64,
        slot: u32,
        tls: bool,
        protocol: ProtocolName,
    ) -> Self {
        let mut c = Connection {
            binding: None,
            key,
            slot,
            request: HalfStream::default(),
            response: HalfStream::default(),
            last_seen_ns: now_ns,
            payload_seen: false,
            tls: tls.then(|| Box::new(TlsConnection::new())),
            binary: BinaryConnection::of(protocol),
        };
        // A capture may start in the middle of a message: look for the first `8=FIX`.
        c.request.framer.resync();
        c.response.framer.resync();
        c
    }

    pub(crate) fn finished(&self) -> bool {
        self.request.reassembler.finished() && self.response.reassembler.finished()
    }

    /// Gives up any capture hole of either direction: what was held behind it is framed at
    /// its own times (before the connection is closed or forgotten, or at the end).
    pub(crate) fn flush(
        &mut self,
        reassembly: &mut ReassemblyCounters,
        sink: &mut MessageSink<'_>,
    ) {
        let (key, slot) = (self.key, self.slot);
        let binding = &mut self.binding;
        let tls = &mut self.tls;
        let binary = &mut self.binary;
        for direction in [Direction::Request, Direction::Response] {
            let (half, other) = match direction {
                Direction::Request => (&mut self.request, &mut self.response),
                Direction::Response => (&mut self.response, &mut self.request),
            };
            half.reassembler.flush(reassembly, |event| {
                sink.half_stream_event(
                    event,
                    tls,
                    binary,
                    [&mut half.framer, &mut other.framer],
                    direction,
                    binding,
                    key,
                    slot,
                )
            });
        }
        if let Some(tls) = tls.as_mut().filter(|t| t.needs_settling()) {
            // Still held for its key as it ends: a last look, then no_key (or, followed by
            // calls, its calls still held are unmapped).
            sink.tls_stream_event(
                TlsInput::End,
                tls,
                [&mut self.request.framer, &mut self.response.framer],
                Direction::Request,
                binding,
                key,
                slot,
            );
        }
    }

    /// Gives up the holes of either direction that the peer acknowledged more than the
    /// reorder window ago by `now_ns` (a capture drop); a hole acknowledged meanwhile gets
    /// its deadline in `acked`.
    pub(crate) fn give_up_acked(
        &mut self,
        now_ns: u64,
        reassembly: &mut ReassemblyCounters,
        sink: &mut MessageSink<'_>,
        acked: &mut Deadlines,
    ) {
        let (key, slot) = (self.key, self.slot);
        let binding = &mut self.binding;
        let tls = &mut self.tls;
        let binary = &mut self.binary;
        for direction in [Direction::Request, Direction::Response] {
            let (half, other) = match direction {
                Direction::Request => (&mut self.request, &mut self.response),
                Direction::Response => (&mut self.response, &mut self.request),
            };
            half.reassembler.give_up_acked(now_ns, reassembly, |event| {
                sink.half_stream_event(
                    event,
                    tls,
                    binary,
                    [&mut half.framer, &mut other.framer],
                    direction,
                    binding,
                    key,
                    slot,
                )
            });
            if let Some(deadline) = half.reassembler.take_new_deadline() {
                acked.insert(deadline, key);
            }
        }
    }

    /// The clock reached `now_ns` (`held_for_key` says this connection's wait for its TLS
    /// key may be over): a look for the key, then `no_key` once the wait passed; nothing
    /// for a connection no longer held.
    pub(crate) fn key_wait_due(&mut self, now_ns: u64, sink: &mut MessageSink<'_>) {
        if let Some(tls) = self.tls.as_mut().filter(|t| t.is_awaiting_key()) {
            sink.tls_stream_event(
                TlsInput::Clock(now_ns),
                tls,
                [&mut self.request.framer, &mut self.response.framer],
                Direction::Request,
                &mut self.binding,
                self.key,
                self.slot,
            );
        }
    }

    /// The connection is gone: its session learns it (an anonymous one ends).
    pub(crate) fn close(&self, sink: &mut MessageSink<'_>) {
        if let Some(b) = &self.binary {
            b.add_counters(&mut sink.router.binary.ended);
        }
        if let Some(f) = sink.forward.as_deref_mut() {
            f.closed(self.slot);
            return;
        }
        if let Some(b) = self.binding {
            sink.router.layer.connection_closed(
                b,
                sink.router.correlator,
                sink.router.stats.session_table_mut(),
            );
        }
    }
}

/// How long a closed connection's 4-tuple is remembered: its trailing ACK/FIN/RST and late
/// retransmissions come within TIME_WAIT (60 s on Linux, 2×MSL at most 4 min elsewhere).
pub(crate) const CLOSED_CONNECTION_MEMORY_NS: u64 = 240_000_000_000;

/// 4-tuples of connections closed recently, bounded like the connection table.
#[derive(Default)]
pub(crate) struct ClosedConnections {
    pub(crate) closed_at: HashMap<ConnectionKey, u64>,
}

impl ClosedConnections {
    /// Remembered at most; beyond it the older half is forgotten.
    const LIMIT: usize = 1 << 16;

    pub(crate) fn insert(&mut self, key: ConnectionKey, ts_ns: u64) {
        if self.closed_at.len() >= Self::LIMIT {
            let mut times: Vec<u64> = self.closed_at.values().copied().collect();
            let mid = times.len() / 2;
            let (_, &mut median, _) = times.select_nth_unstable(mid);
            self.closed_at.retain(|_, t| *t > median);
        }
        self.closed_at.insert(key, ts_ns);
    }

    pub(crate) fn contains(&self, key: &ConnectionKey) -> bool {
        !self.closed_at.is_empty() && self.closed_at.contains_key(key)
    }

    pub(crate) fn forget(&mut self, key: &ConnectionKey) {
        if !self.closed_at.is_empty() {
            self.closed_at.remove(key);
        }
    }

    pub(crate) fn expire(&mut self, before_ns: u64) {
        self.closed_at.retain(|_, t| *t >= before_ns);
    }
}
