//! Owned segments in bulk: the unit the reader thread hands to the pipeline's thread.

use crate::pcap::CaptureStats;
use fixscope_model::segment::{Direction, FlowKey, Segment, TcpFlags};

/// A segment's fields with its payload as a range of the batch's arena.
#[derive(Clone, Copy)]
struct SegmentMeta {
    ts_ns: u64,
    flow: FlowKey,
    direction: Direction,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    missing_tail: u32,
    payload_start: usize,
    payload_end: usize,
}

/// Owned segments: metadata plus one byte arena for every payload, and the capture
/// counters as they stood after the last of them.
#[derive(Default)]
pub(crate) struct SegmentBatch {
    metas: Vec<SegmentMeta>,
    payloads: Vec<u8>,
    pub(crate) stats: CaptureStats,
}

impl SegmentBatch {
    pub(crate) fn with_capacity(segments: usize, payload_bytes: usize) -> Self {
        SegmentBatch {
            metas: Vec::with_capacity(segments),
            payloads: Vec::with_capacity(payload_bytes),
            stats: CaptureStats::default(),
        }
    }

    pub(crate) fn push(&mut self, s: &Segment<'_>) {
        let payload_start = self.payloads.len();
        self.payloads.extend_from_slice(s.payload);
        self.metas.push(SegmentMeta {
            ts_ns: s.ts_ns,
            flow: s.flow,
            direction: s.direction,
            seq: s.seq,
            ack: s.ack,
            flags: s.flags,
            missing_tail: s.missing_tail,
            payload_start,
            payload_end: self.payloads.len(),
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.metas.len()
    }

    /// Whether the batch holds allocations worth recycling.
    pub(crate) fn is_allocated(&self) -> bool {
        self.metas.capacity() > 0
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// Segment `i` (< `len()`), borrowing its payload from the arena.
    pub(crate) fn segment(&self, i: usize) -> Segment<'_> {
        let m = &self.metas[i];
        Segment {
            ts_ns: m.ts_ns,
            flow: m.flow,
            direction: m.direction,
            seq: m.seq,
            ack: m.ack,
            flags: m.flags,
            payload: &self.payloads[m.payload_start..m.payload_end],
            missing_tail: m.missing_tail,
        }
    }

    /// Empties the batch, keeping its allocations for reuse.
    pub(crate) fn clear(&mut self) {
        self.metas.clear();
        self.payloads.clear();
    }
}
