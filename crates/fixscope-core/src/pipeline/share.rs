//! What crosses from a shard worker to the merger: the data only, so the pipeline (which
//! fills it) and the merger (which reads it) both depend on this file and not on each other.

use crate::report::Counters;
use crate::segment::ConnectionKey;
use crate::stats::IntervalShare;

pub use crate::session::SessionIdentity;

/// A session a worker opened, for the merger's numbering.
#[derive(Clone, Debug)]
pub struct OpenedSession {
    /// The worker's own id (1, 2, … in the worker's order).
    pub local_id: u64,
    /// The index in the run of the segment that opened it.
    pub segment_index: u64,
    pub connection: ConnectionKey,
    /// A named session's identity: the merger checks that no session is split across
    /// workers (its connections from several shard keys).
    pub identity: Option<SessionIdentity>,
}

/// A message a worker routed (for the session layer's rates, replayed by the merger in
/// the run's order: by segment, then in the worker's order within it).
#[derive(Clone, Copy, Debug)]
pub struct RoutedMessage {
    pub segment_index: u64,
    pub ts_ns: u64,
    pub local_session: u64,
}

/// What a worker hands over at an interval's end (recycled through the merger).
pub struct WorkerShare {
    pub(crate) counters: Counters,
    pub(crate) stats: IntervalShare,
    pub(crate) opened: Vec<OpenedSession>,
    pub(crate) messages: Vec<RoutedMessage>,
    /// A binary order session this worker cannot read (it is read on one pipeline).
    pub(crate) needs_one_pipeline: Option<&'static str>,
}

/// What a worker hands over at the end: its per-session table (local ids), its session
/// layer's run figures and its `--by` groups.
pub struct WorkerEnd {
    pub(crate) sessions: Vec<crate::session::table::SessionStats>,
    /// The per-session latencies, by the same local ids.
    pub(crate) session_latency: Vec<crate::consumers::SessionLatency>,
    pub(crate) layer: crate::session::SessionLayerStats,
    pub(crate) by: Option<crate::group::GroupStats>,
}

impl WorkerShare {
    pub(crate) fn new(like: &crate::stats::Stats) -> Self {
        WorkerShare {
            counters: Counters::default(),
            stats: IntervalShare::new(like),
            opened: Vec::new(),
            messages: Vec::new(),
            needs_one_pipeline: None,
        }
    }
}

/// What a worker pipeline of a sharded run keeps for the merger.
#[derive(Default)]
pub(crate) struct ShardState {
    pub(crate) segment_index: u64,
    pub(crate) opened: Vec<OpenedSession>,
    /// Every message routed since the last hand-over: the merger replays them in the
    /// run's order into the session layer's rates (1 ms peaks over several workers).
    pub(crate) messages: Vec<RoutedMessage>,
}
