//! The merge of several rings into one stream in kernel-timestamp order, so that a response
//! is never handed on before its request although the two were taken on different CPUs and
//! written to different rings.
//!
//! Every ring's records begin with a `u64 ts_ns` (CLOCK_MONOTONIC, native byte order); each
//! ring comes with a tag that tells the consumer how to decode its records
//! ([`Merge::add`]). Records are read in place (zero-copy) and their space released once
//! handed on.
//!
//! The watermark: a program takes its timestamp a little before it reserves ring space, and
//! may be interrupted in between (an interrupt, a vCPU the host deschedules), so neither a
//! ring's order nor the rings' contents at one instant say that no older record is still on
//! its way. The merge assumes a record is committed within [`Merge::grace_ns`] of its
//! timestamp: a drain that starts at `now` hands on only records stamped before
//! `now - grace`, and only in timestamp order, which is then final. A record that comes
//! later than that is handed on as soon as it is seen and counted as late
//! ([`Merge::late_records`]); the grace doubles past the lateness seen (up to
//! [`MAX_GRACE_NS`]), so a host that delays its programs that much is soon waited for.
//!
//! [`Merge::delivered_to`] is the time up to which every record has been handed on: a clock
//! that never runs ahead of the records (the live source's `now_ns`, which raises `-t`
//! alerts, is this, not the wall clock).

use fixscope_core::source::Flow;

use crate::ring::{At, Ring};

/// The grace a merge starts with. Far above a program's run time (< 2 µs) and an interrupt
/// between its timestamp and its reservation; a vCPU descheduled in between for longer
/// makes a late record, which raises the grace.
pub(crate) const INITIAL_GRACE_NS: u64 = 500_000;
/// The most the grace grows to: records are handed on at most this long after they were
/// stamped (which changes no latency: those are kernel timestamps).
pub(crate) const MAX_GRACE_NS: u64 = 250_000_000;

/// What the merge needs of a ring: [`Ring`], or a synthetic one in tests.
pub(crate) trait RecordRing {
    fn consumer(&self) -> u64;
    fn producer(&self) -> u64;
    fn record_at(&self, pos: u64) -> At<'_>;
    fn release(&mut self, pos: u64);
    /// Bytes of data area: a drain reads at most 1/8 of it.
    fn size(&self) -> usize;
}

impl RecordRing for Ring {
    fn consumer(&self) -> u64 {
        Ring::consumer(self)
    }
    fn producer(&self) -> u64 {
        Ring::producer(self)
    }
    fn record_at(&self, pos: u64) -> At<'_> {
        Ring::record_at(self, pos)
    }
    fn release(&mut self, pos: u64) {
        Ring::release(self, pos)
    }
    fn size(&self) -> usize {
        Ring::size(self)
    }
}

struct Lane<R, T> {
    ring: R,
    tag: T,
    /// Positions past the consumer position of records already handed on (only after a
    /// drain was stopped between two records of this ring that were out of ring order).
    handed: Vec<u64>,
    /// Records of this ring handed on.
    delivered: u64,
}

/// One record seen by a drain.
#[derive(Clone, Copy, Debug)]
struct Entry {
    ts: u64,
    pos: u64,
    next: u64,
    lane: u32,
    kind: Kind,
    handed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A record to hand on.
    Record,
    /// Discarded by the kernel: stepped over.
    Skip,
    /// Shorter than its timestamp: stepped over and counted.
    Short,
}

impl Entry {
    fn real(&self) -> bool {
        self.kind == Kind::Record
    }
}

/// What one [`Merge::drain`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Records handed to the callback.
    pub delivered: usize,
    /// Committed records seen and held back by the watermark.
    pub held: usize,
    /// When the oldest held record may be handed on (CLOCK_MONOTONIC ns).
    pub release_at_ns: Option<u64>,
}

/// Rings merged by timestamp; `T` tags each ring's records with how to decode them.
pub(crate) struct Merge<R, T> {
    lanes: Vec<Lane<R, T>>,
    grace_ns: u64,
    delivered_to: u64,
    late: u64,
    short: u64,
    /// Scratch, kept to reuse the allocations.
    seen: Vec<Entry>,
    order: Vec<u32>,
}

impl<R: RecordRing, T> Merge<R, T> {
    /// An empty merge whose clock starts at `start_ns` (no record stamped earlier exists).
    pub(crate) fn new(start_ns: u64) -> Self {
        Merge {
            lanes: Vec::new(),
            grace_ns: INITIAL_GRACE_NS,
            delivered_to: start_ns.saturating_sub(INITIAL_GRACE_NS),
            late: 0,
            short: 0,
            seen: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Adds a ring whose records begin with a `u64 ts_ns` (CLOCK_MONOTONIC); the drain's
    /// callback gets `tag` with each of its records.
    pub(crate) fn add(&mut self, ring: R, tag: T) {
        self.lanes.push(Lane {
            ring,
            tag,
            handed: Vec::new(),
            delivered: 0,
        });
    }

    /// The rings, in the order they were added.
    pub(crate) fn rings(&self) -> impl Iterator<Item = &R> {
        self.lanes.iter().map(|l| &l.ring)
    }

    /// Every record stamped at or before this has been handed on (apart from late ones).
    pub(crate) fn delivered_to(&self) -> u64 {
        self.delivered_to
    }

    pub(crate) fn grace_ns(&self) -> u64 {
        self.grace_ns
    }

    /// Records handed on, per ring (in the order the rings were added).
    pub(crate) fn records_per_ring(&self) -> Vec<u64> {
        self.lanes.iter().map(|l| l.delivered).collect()
    }

    /// Records that arrived after records stamped later had been handed on.
    pub(crate) fn late_records(&self) -> u64 {
        self.late
    }

    /// Records shorter than their timestamp, stepped over.
    pub(crate) fn short_records(&self) -> u64 {
        self.short
    }

    /// Hands every record stamped before `now_ns - grace` to `f`, in timestamp order (ties
    /// in the order the rings were added, then ring order), until `f` says [`Flow::Stop`].
    /// `now_ns` is CLOCK_MONOTONIC read before the call.
    pub(crate) fn drain(&mut self, now_ns: u64, f: &mut dyn FnMut(&T, &[u8]) -> Flow) -> Drained {
        let floor = self.delivered_to;
        let w = now_ns.saturating_sub(self.grace_ns).max(floor);
        self.seen.clear();
        // Each lane's entries are seen[bounds[l]..bounds[l + 1]], in ring order.
        let mut bound = w.saturating_add(1);
        let mut ranges = Vec::with_capacity(self.lanes.len());
        for (li, lane) in self.lanes.iter().enumerate() {
            let first = self.seen.len();
            let complete = scan(lane, li as u32, &mut self.seen);
            let mine = &self.seen[first..];
            // A record stamped before the watermark behind one after it cannot be handed
            // on before the later one is: nothing stamped at or after it may go yet.
            if let Some(p) = mine.iter().position(|e| e.ts > w) {
                let behind = mine[p..].iter().filter(|e| e.real() && e.ts <= w);
                if let Some(stuck) = behind.map(|e| e.ts).min() {
                    bound = bound.min(stuck);
                }
            }
            // A drain that stopped at its budget has not seen the rest of the ring: its
            // records are about as recent as the last one seen.
            if !complete {
                if let Some(last) = mine.iter().rev().find(|e| e.real()) {
                    bound = bound.min(last.ts);
                }
            }
            ranges.push(first..self.seen.len());
        }
        let bound = bound.max(floor.saturating_add(1));

        // The records to hand on: each lane's longest prefix stamped before `bound`. Every
        // record left behind is stamped at or after it (or is late).
        self.order.clear();
        let mut held = 0;
        let mut oldest_held: Option<u64> = None;
        for r in &ranges {
            let mut in_prefix = true;
            for i in r.clone() {
                let e = &self.seen[i];
                in_prefix &= !e.real() || e.ts < bound;
                if in_prefix {
                    self.order.push(i as u32);
                } else if e.real() {
                    held += 1;
                    oldest_held = Some(oldest_held.map_or(e.ts, |o| o.min(e.ts)));
                }
            }
        }
        // Stable: ties stay in lane, then ring order; each lane is (nearly) sorted already,
        // which the standard library's merge sort finds as runs.
        let seen = &self.seen;
        self.order.sort_by_key(|&i| seen[i as usize].ts);

        let mut delivered = 0;
        let mut stopped_at: Option<u64> = None;
        for &i in &self.order {
            let e = self.seen[i as usize];
            let lane = &mut self.lanes[e.lane as usize];
            self.seen[i as usize].handed = true;
            match e.kind {
                Kind::Record => {}
                Kind::Skip => continue,
                Kind::Short => {
                    self.short += 1;
                    continue;
                }
            }
            if let Some(k) = lane.handed.iter().position(|&p| p == e.pos) {
                lane.handed.swap_remove(k); // handed on by the drain that stopped
                continue;
            }
            let At::Record { bytes, .. } = lane.ring.record_at(e.pos) else {
                continue; // cannot change under us: we saw it committed
            };
            if e.ts <= floor {
                self.late += 1;
                self.grace_ns = (floor - e.ts)
                    .saturating_mul(2)
                    .max(self.grace_ns)
                    .min(MAX_GRACE_NS);
            }
            delivered += 1;
            lane.delivered += 1;
            if f(&lane.tag, bytes) == Flow::Stop {
                stopped_at = Some(e.ts);
                break;
            }
        }

        // Release each lane up to its first record not handed on; remember the ones handed
        // on beyond it (only after a stop, or behind a held record).
        for (li, r) in ranges.iter().enumerate() {
            let lane = &mut self.lanes[li];
            let mut release = None;
            let mut gap = false;
            for e in &self.seen[r.clone()] {
                if !e.handed {
                    gap = true;
                } else if gap {
                    lane.handed.push(e.pos);
                } else {
                    release = Some(e.next);
                }
            }
            if let Some(pos) = release {
                lane.ring.release(pos);
                lane.handed.retain(|&p| p >= pos);
            }
        }
        self.delivered_to = match stopped_at {
            Some(ts) => floor.max(ts.saturating_sub(1)),
            None => floor.max(bound - 1),
        };
        Drained {
            delivered,
            held,
            release_at_ns: oldest_held.map(|ts| ts.saturating_add(self.grace_ns)),
        }
    }
}

/// Reads lane `li`'s committed records into `seen`, from the consumer position up to the
/// first uncommitted one, at most 1/8 of the ring. Returns whether it reached the end.
fn scan<R: RecordRing, T>(lane: &Lane<R, T>, li: u32, seen: &mut Vec<Entry>) -> bool {
    let ring = &lane.ring;
    let prod = ring.producer();
    let mut pos = ring.consumer();
    // Space is released only after a drain: reading at most 1/8 of the ring per drain gives
    // it back to the producers at least that often while a backlog is worked off.
    let budget_end = pos + (ring.size() as u64 / 8).max(1);
    while pos < prod {
        if pos >= budget_end {
            return false;
        }
        let (ts, kind, next) = match ring.record_at(pos) {
            At::Busy => return true,
            At::Skip { next } => (0, Kind::Skip, next),
            At::Record { bytes, next } => match bytes.get(..8) {
                Some(b) => (
                    u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
                    Kind::Record,
                    next,
                ),
                None => (0, Kind::Short, next),
            },
        };
        seen.push(Entry {
            ts,
            pos,
            next,
            lane: li,
            kind,
            handed: false,
        });
        pos = next;
    }
    true
}

#[cfg(test)]
mod tests;
