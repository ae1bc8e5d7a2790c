//! Stage A → stage B of a two-stage run (`crate::twostage`): everything the one pipeline
//! does between its framing and its routing, as events in stream order, in batches.
//!
//! A pipeline in stage A (`Pipeline::into_stage_a`) runs the connection table, TCP
//! reassembly and FIX framing; where the one pipeline calls the correlator, the session
//! layer or the statistics, it pushes an [`Event`] here instead:
//!
//! | one pipeline calls                          | stage A sends            |
//! |---------------------------------------------|--------------------------|
//! | `correlator.expire(now)` before a segment   | [`Event::Clock`] (folded into the message when the first event is one: [`MessageRef::expire`]), before the segment's first event (a segment with none sends none: expiring at t1 then t2 with nothing between is expiring at t2; but a segment with events always sends one, even at an unchanged clock — a request framed from bytes held behind a hole may be older than `-t` at once) |
//! | `Router::on_message` per framed message      | [`Event::Message`]       |
//! | `SessionLayer::capture_hole`                 | [`Event::Hole`]          |
//! | `SessionLayer::connection_closed`            | [`Event::Closed`]        |
//! | a bound session learns its TLS suite          | [`Event::Tls`], once per connection, when its keys are derived |
//! | the driver's interval report before a segment | [`Event::IntervalEnd`], with A's counters |
//! | `finish` after flushing every stream         | [`Event::End`], with A's final counters |
//!
//! Stage B (`stages.rs`) makes those very calls, in that order, on its own pipeline: the
//! outputs are one pipeline's by construction.
//!
//! **The hand-over is nearly free**: a message whose bytes lie in the memory-mapped capture
//! (it came whole in one segment, read in place: the common case) travels as a range of
//! the mapping, which the batch keeps alive (`Arc`); only a message the framer or the
//! reassembler put together (split across segments, held behind a hole, or a capture read
//! by the streaming reader: pcapng, stdin) is copied, into the batch's arena. Events go in
//! batches of [`BATCH_EVENTS`] (one wake-up each), and emptied batches come back to be
//! refilled: nothing is allocated once [`BATCHES_IN_FLIGHT`] exist.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

use super::handover::ToReports;

use crate::fix::framing::{FramedMessage, FramingCounters};
use crate::pcap::{CaptureError, CaptureStats};
use crate::reassembly::ReassemblyCounters;
use crate::segment::{ConnectionKey, Direction};

/// Events per batch: a wake-up of stage B per ~1,000 messages, and a batch (~100 KB)
/// still in the caches when B reads it.
pub(crate) const BATCH_EVENTS: usize = 2048;
/// Batches in flight (queued, being filled, being applied): bounds memory and how far A
/// runs ahead of B.
pub(crate) const BATCHES_IN_FLIGHT: usize = 8;

/// How far ahead stage B asks for its messages' bytes (events; it asks for 192 bytes).
pub(crate) const PREFETCH_EVENTS: usize = 8;

/// Stage A's counters: what the one pipeline counts before its routing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Upstream {
    pub(crate) segments: u64,
    pub(crate) connections: u64,
    pub(crate) stray_segments: u64,
    pub(crate) open_connections: u64,
    pub(crate) shed_connections: u64,
    pub(crate) framing: FramingCounters,
    pub(crate) reassembly: ReassemblyCounters,
    /// `--tls-keylog` only.
    pub(crate) tls: Option<crate::counters::TlsCounters>,
}

/// One framed message, its bytes as a range of the batch's mapping or arena.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MessageRef {
    pub(crate) slot: u32,
    pub(crate) direction: Direction,
    /// In the batch's mapping (else in its arena).
    pub(crate) in_map: bool,
    pub(crate) len: u32,
    pub(crate) start: usize,
    pub(crate) first_byte_ts_ns: u64,
    pub(crate) last_byte_ts_ns: u64,
    pub(crate) first_byte_seq: u32,
    pub(crate) last_byte_seq: u32,
    /// `correlator.expire(now_ns)` first (the segment's clock, folded into its first
    /// event: half the events of a separate [`Event::Clock`]).
    pub(crate) expire: bool,
    pub(crate) now_ns: u64,
}

/// What stage B does next (see the module's table).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// `correlator.expire(now)`.
    Clock(u64),
    /// A connection opened in `slot` (free until its `Closed`), its key `keys[key]`.
    Opened {
        slot: u32,
        key: u32,
    },
    Message(MessageRef),
    Hole {
        slot: u32,
        direction: Direction,
    },
    Closed {
        slot: u32,
    },
    /// The connection in `slot` is decrypted with this version and suite (`--tls-keylog`):
    /// its session shows them.
    Tls {
        slot: u32,
        tls: crate::tls::TlsSession,
    },
    /// `intervals[i]` ended (before the segment that ended it).
    IntervalEnd(u32),
    /// `files[i]` was read to its end.
    FileDone(u32),
    /// The run ended: `end`.
    End,
}

/// An interval's end as stage A saw it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IntervalMark {
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) upstream: Upstream,
}

/// The run's end as stage A saw it.
#[derive(Debug)]
pub(crate) struct EndMark {
    pub(crate) upstream: Upstream,
    pub(crate) first_ts_ns: Option<u64>,
    pub(crate) now_ns: u64,
    pub(crate) interval_start_ns: Option<u64>,
    /// The capture counters of everything read.
    pub(crate) stats: CaptureStats,
    /// The file that stopped the reading, after every segment before it.
    pub(crate) error: Option<CaptureError>,
    /// A stop (Ctrl-C) ended the reading before the end of the captures.
    pub(crate) stopped: bool,
    /// Segments handed to stage A.
    pub(crate) segments: u64,
}

/// Events and what they refer to; recycled between the stages.
#[derive(Default)]
pub(crate) struct EventBatch {
    pub(crate) events: Vec<Event>,
    /// Bytes of the messages not in `map`.
    pub(crate) arena: Vec<u8>,
    /// The capture mapping the in-map messages are ranges of.
    pub(crate) map: Option<Arc<memmap2::Mmap>>,
    pub(crate) keys: Vec<ConnectionKey>,
    pub(crate) intervals: Vec<IntervalMark>,
    pub(crate) files: Vec<(usize, CaptureStats)>,
    pub(crate) end: Option<EndMark>,
}

impl EventBatch {
    fn new() -> Self {
        EventBatch {
            events: Vec::with_capacity(BATCH_EVENTS),
            arena: Vec::with_capacity(BATCH_EVENTS * 64),
            ..EventBatch::default()
        }
    }

    /// Empties the batch, keeping its allocations.
    pub(crate) fn clear(&mut self) {
        self.events.clear();
        self.arena.clear();
        self.map = None;
        self.keys.clear();
        self.intervals.clear();
        self.files.clear();
        self.end = None;
    }

    /// Asks for the first cache lines of event `i`'s message ahead of their use: stage A
    /// read them on the other core, and the fields stage B reads (MsgType, the CompIDs,
    /// ClOrdID) sit in a message's first ~200 bytes.
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(Event::Message(m)) = self.events.get(i) {
            let bytes = self.bytes(m);
            crate::pcap::prefetch(bytes, 0);
            if bytes.len() > 64 {
                crate::pcap::prefetch(bytes, 64);
            }
            if bytes.len() > 128 {
                crate::pcap::prefetch(bytes, 128);
            }
        }
    }

    /// A message's bytes.
    pub(crate) fn bytes(&self, m: &MessageRef) -> &[u8] {
        let range = m.start..m.start + m.len as usize;
        match (&self.map, m.in_map) {
            (Some(map), true) => &map[range],
            _ => &self.arena[range],
        }
    }
}

/// What stage B gives back to stage A's thread, on one channel: emptied batches, and
/// what the reporting side (on stage A's thread, `crate::twostage`) reports. One channel,
/// so a stage A waiting for an emptied batch takes the reports that come first: nothing
/// waits on two channels, and stage B never waits for a report to be taken without
/// stage A soon taking it (it takes everything that came at each batch it sends).
// Batches are most of what comes back, by value as they always went (a move of a few
// hundred bytes per ~2,000 events).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Back {
    Batch(EventBatch),
    Report(ToReports),
}

/// Stage A's end of the hand-over.
pub(crate) struct Forwarder {
    batch: EventBatch,
    /// The clock as of the last segment, and whether it is still to be sent.
    now_ns: u64,
    clock_pending: bool,
    next_slot: u32,
    free_slots: Vec<u32>,
    /// The mapping of the capture being read, and its address range.
    map: Option<Arc<memmap2::Mmap>>,
    map_range: (usize, usize),
    full: SyncSender<EventBatch>,
    back: Receiver<Back>,
    /// Reports that came back with the batches, not yet taken ([`Forwarder::next_report`]).
    reports: VecDeque<ToReports>,
    allocated: usize,
    /// Stage B is gone (it failed, or its reporter did): stage A stops reading.
    gone: bool,
}

impl Forwarder {
    /// Sends full batches on `full`; takes emptied ones (and reports) back from `back`.
    pub(crate) fn new(full: SyncSender<EventBatch>, back: Receiver<Back>) -> Self {
        Forwarder {
            batch: EventBatch::new(),
            now_ns: 0,
            clock_pending: false,
            next_slot: 0,
            free_slots: Vec::new(),
            map: None,
            map_range: (0, 0),
            full,
            back,
            reports: VecDeque::new(),
            allocated: 1,
            gone: false,
        }
    }

    /// Whether stage B is gone.
    pub(crate) fn gone(&self) -> bool {
        self.gone
    }

    /// The next report that came back (taken as batches came back: one check per call).
    #[inline]
    pub(crate) fn next_report(&mut self) -> Option<ToReports> {
        self.reports.pop_front()
    }

    /// The next report, waiting for it (after the end: stage B's last ones); `None` once
    /// stage B is gone.
    pub(crate) fn wait_report(&mut self) -> Option<ToReports> {
        loop {
            if let Some(report) = self.reports.pop_front() {
                return Some(report);
            }
            match self.back.recv().ok()? {
                Back::Report(report) => return Some(report),
                // After the end nothing more is sent: the batch is not needed.
                Back::Batch(_) => {}
            }
        }
    }

    /// An emptied batch if one came back (keeping the reports that came with it), else
    /// `None`; `wait`: waits for one (`None`: stage B is gone).
    fn take_back(&mut self, wait: bool) -> Option<EventBatch> {
        loop {
            let back = if wait {
                self.back.recv().ok()?
            } else {
                self.back.try_recv().ok()?
            };
            match back {
                Back::Batch(batch) => return Some(batch),
                Back::Report(report) => self.reports.push_back(report),
            }
        }
    }

    /// The capture now being read is `map` (None: read by the streaming reader). Sent
    /// first: a batch's in-map messages are all of one mapping.
    pub(crate) fn set_map(&mut self, map: Option<Arc<memmap2::Mmap>>) {
        if !self.batch.events.is_empty() {
            self.send();
        }
        self.map_range = map.as_ref().map_or((0, 0), |m| {
            (m.as_ptr() as usize, m.as_ptr() as usize + m.len())
        });
        self.map = map;
    }

    /// The clock before a segment (`correlator.expire`), sent before the next event.
    #[inline]
    pub(crate) fn clock(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
        self.clock_pending = true;
    }

    #[inline]
    fn push(&mut self, event: Event) {
        if self.clock_pending {
            self.clock_pending = false;
            self.batch.events.push(Event::Clock(self.now_ns));
        }
        self.push_after_clock(event);
    }

    /// [`Forwarder::push`] of an event that carries the clock itself (or follows it).
    #[inline]
    fn push_after_clock(&mut self, event: Event) {
        self.batch.events.push(event);
        if self.batch.events.len() >= BATCH_EVENTS {
            self.send();
        }
    }

    /// A connection opened on `key`: its slot.
    pub(crate) fn opened(&mut self, key: ConnectionKey) -> u32 {
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.next_slot += 1;
            self.next_slot - 1
        });
        let key_index = self.batch.keys.len() as u32;
        self.batch.keys.push(key);
        self.push(Event::Opened {
            slot,
            key: key_index,
        });
        slot
    }

    #[inline]
    pub(crate) fn message(&mut self, slot: u32, direction: Direction, msg: &FramedMessage<'_>) {
        let at = msg.bytes.as_ptr() as usize;
        let (map_start, map_end) = self.map_range;
        // In place when the bytes are a slice of the mapping (see the module).
        let (in_map, start) = if at >= map_start && at + msg.bytes.len() <= map_end {
            (true, at - map_start)
        } else {
            let start = self.batch.arena.len();
            self.batch.arena.extend_from_slice(msg.bytes);
            (false, start)
        };
        let expire = std::mem::take(&mut self.clock_pending);
        self.push_after_clock(Event::Message(MessageRef {
            slot,
            direction,
            in_map,
            len: msg.bytes.len() as u32,
            start,
            first_byte_ts_ns: msg.first_byte_ts_ns,
            last_byte_ts_ns: msg.last_byte_ts_ns,
            first_byte_seq: msg.first_byte_seq,
            last_byte_seq: msg.last_byte_seq,
            expire,
            now_ns: self.now_ns,
        }));
    }

    pub(crate) fn hole(&mut self, slot: u32, direction: Direction) {
        self.push(Event::Hole { slot, direction });
    }

    /// The connection in `slot` has its keys: its version and suite.
    pub(crate) fn tls(&mut self, slot: u32, tls: crate::tls::TlsSession) {
        self.push(Event::Tls { slot, tls });
    }

    /// The connection in `slot` is gone; the slot is free for the next one.
    pub(crate) fn closed(&mut self, slot: u32) {
        self.push(Event::Closed { slot });
        self.free_slots.push(slot);
    }

    pub(crate) fn interval_end(&mut self, mark: IntervalMark) {
        let i = self.batch.intervals.len() as u32;
        self.batch.intervals.push(mark);
        self.push(Event::IntervalEnd(i));
    }

    /// `index` was read to its end: sent at once (a progress bar counts files).
    pub(crate) fn file_done(&mut self, index: usize, stats: CaptureStats) {
        let i = self.batch.files.len() as u32;
        self.batch.files.push((index, stats));
        self.push(Event::FileDone(i));
        self.send();
    }

    /// The end: sent at once; nothing follows.
    pub(crate) fn end(&mut self, mark: EndMark) {
        self.batch.end = Some(mark);
        self.push(Event::End);
        self.send();
    }

    /// Sends the batch and takes an empty one (waiting for one to come back once
    /// [`BATCHES_IN_FLIGHT`] exist).
    fn send(&mut self) {
        if self.gone {
            self.batch.clear();
            return;
        }
        let next = match self.take_back(false) {
            Some(batch) => batch,
            None if self.allocated < BATCHES_IN_FLIGHT => {
                self.allocated += 1;
                EventBatch::new()
            }
            None => match self.take_back(true) {
                Some(batch) => batch,
                None => {
                    self.gone = true;
                    self.batch.clear();
                    return;
                }
            },
        };
        let mut full = std::mem::replace(&mut self.batch, next);
        full.map.clone_from(&self.map);
        self.gone = self.full.send(full).is_err();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn message(bytes: &[u8]) -> FramedMessage<'_> {
        FramedMessage {
            bytes,
            first_byte_ts_ns: 1,
            last_byte_ts_ns: 2,
            first_byte_seq: 3,
            last_byte_seq: 4,
        }
    }

    /// A message that is a slice of the mapping travels as its range (no copy), exactly;
    /// any other is copied into the arena; the clock goes once before the events after it;
    /// batches come back and are reused (nothing allocated once the first ones exist).
    #[test]
    fn messages_in_the_mapping_travel_as_ranges_and_batches_are_reused() {
        let mut anon = memmap2::MmapMut::map_anon(4096).unwrap();
        anon[100..110].copy_from_slice(b"8=FIX.4.4\x01");
        let map = Arc::new(anon.make_read_only().unwrap());
        let (full_tx, full_rx) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (back_tx, back_rx) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let mut f = Forwarder::new(full_tx, back_rx);
        f.set_map(Some(map.clone()));
        let key = ConnectionKey {
            client: crate::segment::Endpoint {
                addr: "10.0.0.1".parse().unwrap(),
                port: 1,
            },
            server: crate::segment::Endpoint {
                addr: "10.0.0.2".parse().unwrap(),
                port: 2,
            },
        };
        f.clock(7);
        let slot = f.opened(key);
        f.message(slot, Direction::Request, &message(&map[100..110]));
        let elsewhere = b"8=FIX.4.2\x01".to_vec();
        f.message(slot, Direction::Response, &message(&elsewhere));
        f.clock(9);
        f.closed(slot);
        // A segment at the same clock still expires first (a request framed from bytes
        // held behind a hole can be older than `-t` at once).
        f.clock(9);
        assert_eq!(f.opened(key), slot, "a closed connection's slot is reused");
        // A message first after a clock carries it.
        f.clock(11);
        f.message(slot, Direction::Request, &message(&map[100..110]));
        f.send();
        let batch = full_rx.recv().unwrap();
        let kinds: Vec<String> = batch
            .events
            .iter()
            .map(|e| format!("{e:?}").chars().take(5).collect())
            .collect();
        assert_eq!(
            kinds,
            ["Clock", "Opene", "Messa", "Messa", "Clock", "Close", "Clock", "Opene", "Messa"]
        );
        let messages: Vec<MessageRef> = batch
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some(*m),
                _ => None,
            })
            .collect();
        assert!(messages[0].in_map && messages[0].start == 100);
        assert!(!messages[0].expire && !messages[1].expire);
        assert!(messages[2].expire && messages[2].now_ns == 11);
        assert_eq!(batch.bytes(&messages[0]), &map[100..110]);
        assert!(!messages[1].in_map);
        assert_eq!(batch.bytes(&messages[1]), &elsewhere[..]);
        assert_eq!(
            batch.arena.len(),
            elsewhere.len(),
            "only the other one copied"
        );
        // Batches come back: after BATCHES_IN_FLIGHT, no more are made.
        let mut batch = batch;
        for _ in 0..3 * BATCHES_IN_FLIGHT {
            batch.clear();
            back_tx.send(Back::Batch(batch)).unwrap();
            f.hole(slot, Direction::Request);
            f.send();
            batch = full_rx.recv().unwrap();
        }
        assert!(f.allocated <= BATCHES_IN_FLIGHT);
        drop(full_rx);
        f.hole(slot, Direction::Request);
        f.send();
        assert!(f.gone(), "stage B gone: stage A learns it");
    }

    /// Reports come back on the batches' channel: stage A keeps those that came before
    /// the batch it takes, in order, takes no more than that per batch (one check per
    /// segment), and waits for the rest after the end until stage B is gone.
    #[test]
    fn reports_that_come_back_with_the_batches_are_kept_in_order() {
        let (full_tx, full_rx) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (back_tx, back_rx) = mpsc::sync_channel(2 * BATCHES_IN_FLIGHT);
        let mut f = Forwarder::new(full_tx, back_rx);
        let file = |i| Back::Report(ToReports::FileDone(i, Box::default()));
        for _ in 1..BATCHES_IN_FLIGHT {
            f.hole(0, Direction::Request);
            f.send();
        }
        assert_eq!(f.allocated, BATCHES_IN_FLIGHT, "no batch came back yet");
        back_tx.send(file(1)).unwrap();
        back_tx.send(file(2)).unwrap();
        let mut batch = full_rx.recv().unwrap();
        batch.clear();
        back_tx.send(Back::Batch(batch)).unwrap();
        back_tx.send(file(3)).unwrap();
        assert!(
            f.next_report().is_none(),
            "nothing taken before a batch is sent"
        );
        f.hole(0, Direction::Request);
        f.send();
        assert_eq!(
            f.allocated, BATCHES_IN_FLIGHT,
            "the batch that came back is reused"
        );
        let file_done = |r: Option<ToReports>| match r {
            Some(ToReports::FileDone(i, _)) => Some(i),
            _ => None,
        };
        assert_eq!(file_done(f.next_report()), Some(1));
        assert_eq!(file_done(f.next_report()), Some(2));
        assert!(
            f.next_report().is_none(),
            "the report after the batch waits"
        );
        assert_eq!(file_done(f.wait_report()), Some(3));
        drop(back_tx);
        assert!(f.wait_report().is_none(), "stage B gone");
    }
}
