//! A pipeline as a worker of a sharded run (`crate::shard`): the run's clock from the
//! reader, and its figures handed to the merger.

use super::share::ShardState;
use super::Pipeline;
use crate::segment::Segment;

impl Pipeline {
    /// Makes this pipeline a worker of a sharded run (`crate::shard`): it sees only some
    /// connections, takes the run's clock from the reader (`shard_segment`, `shard_tick`,
    /// `shard_sweep`) and hands its figures to the merger (`shard_take_interval`).
    /// Why this input needs one pipeline, when this pipeline (stage A of two, or a worker
    /// of several) met a binary order session it cannot read: its logical session spans
    /// connections a second stage or other workers would not see.
    pub(crate) fn binary_needs_one_pipeline(&self) -> Option<&'static str> {
        self.binary.needs_one_pipeline
    }

    pub(crate) fn into_shard_worker(mut self) -> Self {
        self.shard = Some(ShardState::default());
        self
    }

    /// Feeds segment number `index` of the run (counted over all workers) at the run's
    /// clock `now_ns` (the latest timestamp over all segments up to this one): every
    /// time-driven decision (`-t`, closing) is then the one pipeline's.
    pub(crate) fn shard_segment(&mut self, seg: &Segment<'_>, now_ns: u64, index: u64) {
        self.shard_at_segment(index);
        self.now_ns = self.now_ns.max(now_ns);
        self.on_segment(seg);
    }

    /// What happens now is the run's segment `index` (or follows it): sessions opened,
    /// messages routed and `--by` values first seen are stamped with it for the merger.
    fn shard_at_segment(&mut self, index: u64) {
        if let Some(shard) = self.shard.as_mut() {
            shard.segment_index = index;
        }
        if let Some(by) = self.stats.by_mut() {
            by.set_segment_index(index);
        }
    }

    /// The run's clock moved to `now_ns` (another worker's segment, an interval's end).
    pub(crate) fn shard_tick(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        if self.acked_holes.due(self.now_ns) {
            self.give_up_acked_holes();
        }
        self.correlator.expire(self.now_ns);
        if let Some(b) = self.breakdown.as_mut() {
            b.expire(self.now_ns);
        }
    }

    /// Idle connections are forgotten now: the one pipeline would sweep after the segment
    /// that moved the run's clock to `now_ns`.
    pub(crate) fn shard_sweep(&mut self, now_ns: u64, index: u64) {
        self.shard_at_segment(index);
        self.shard_tick(now_ns);
        self.sweep_idle();
    }

    /// The end of the run: what is held behind capture holes is framed (as `finish`).
    pub(crate) fn shard_finish(&mut self, now_ns: u64) {
        // What the end frames and binds comes after every segment.
        self.shard_at_segment(u64::MAX);
        self.shard_tick(now_ns);
        self.flush_streams();
        if let Some(b) = self.breakdown.as_mut() {
            b.finish_run();
        }
    }

    /// Hands the interval so far to the merger: counters, the interval's latencies and
    /// slowest orders, the sessions opened since the last hand-over; `share` comes back
    /// emptied (its recorders reset).
    pub(crate) fn shard_take_interval(&mut self, share: &mut super::share::WorkerShare) {
        share.counters = self.counters();
        self.stats.take_interval(&mut share.stats);
        share.opened.clear();
        share.messages.clear();
        share.needs_one_pipeline = self.binary.needs_one_pipeline;
        if let Some(shard) = self.shard.as_mut() {
            share.opened.append(&mut shard.opened);
            std::mem::swap(&mut share.messages, &mut shard.messages);
        }
    }

    /// The per-session table (local ids), for the merger's summary.
    pub(crate) fn shard_take_sessions(&mut self) -> super::share::WorkerEnd {
        let (sessions, session_latency) = self.stats.take_sessions();
        super::share::WorkerEnd {
            sessions,
            session_latency,
            layer: std::mem::replace(
                &mut self.stats.layer,
                crate::session::SessionLayerStats::new(self.config.highest_ns),
            ),
            by: self.stats.take_by(),
        }
    }
}
