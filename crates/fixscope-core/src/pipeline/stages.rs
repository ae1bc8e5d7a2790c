//! The one pipeline as two stages (`crate::twostage`): stage A's side (segments in,
//! events out through a [`Forwarder`]) and stage B's (events in, the one pipeline's calls
//! and reports out). See `forward.rs` for what travels between them.

use std::ops::ControlFlow;

use super::forward::{EndMark, Event, EventBatch, Forwarder, IntervalMark, PREFETCH_EVENTS};
use super::handover::{ReportsOut, StageEnd, ToReports};
use super::{Parts, Pipeline};
use crate::fix::framing::FramedMessage;
use crate::pcap::CaptureStats;

impl Pipeline {
    /// Makes this pipeline stage A: its messages and the calls around them go to
    /// `forwarder` (the correlator, session layer and statistics stay unused).
    pub(crate) fn into_stage_a(mut self, forwarder: Forwarder) -> Self {
        self.forward = Some(forwarder);
        self
    }

    /// Stage A's forwarder.
    pub(crate) fn forwarder(&mut self) -> &mut Forwarder {
        self.forward.as_mut().expect("stage A has a forwarder")
    }

    /// Stage A, before a segment stamped `ts_ns` (the driver's `report_due_intervals`):
    /// the interval it ends goes to stage B, with the counters as they stand.
    #[inline]
    pub(crate) fn stage_a_due_intervals(&mut self, ts_ns: u64) {
        if !self.interval_due(ts_ns) {
            return;
        }
        if let Some((start_ns, end_ns)) = self.next_due_interval(ts_ns) {
            let upstream = self.upstream_counters();
            self.forwarder().interval_end(IntervalMark {
                start_ns,
                end_ns,
                upstream,
            });
        }
    }

    /// Stage A at the end (`finish`'s first half): every stream flushed, then the end.
    pub(crate) fn stage_a_finish(
        &mut self,
        stats: CaptureStats,
        error: Option<crate::pcap::CaptureError>,
        segments: u64,
        stopped: bool,
    ) {
        self.flush_streams();
        let mark = EndMark {
            upstream: self.upstream_counters(),
            first_ts_ns: self.first_ts_ns,
            now_ns: self.now_ns,
            interval_start_ns: self.interval_clock.start_ns(),
            stats,
            error,
            segments,
            stopped,
        };
        self.forwarder().end(mark);
    }

    /// Makes this pipeline stage B: it is fed events (`apply`), never segments; its
    /// segment, connection, reassembly and framing counters are stage A's.
    pub(crate) fn into_stage_b(mut self) -> Self {
        self.upstream = Some(Default::default());
        self
    }

    /// Stage B: makes the calls `batch` stands for, in order, handing each interval's end
    /// (and at the end, the run's) to the reporting side. `Break` once the run ended or
    /// the reporting side is gone.
    pub(crate) fn apply(
        &mut self,
        batch: &mut EventBatch,
        out: &mut dyn ReportsOut,
    ) -> ControlFlow<()> {
        for i in 0..batch.events.len() {
            batch.prefetch(i + PREFETCH_EVENTS);
            match batch.events[i] {
                Event::Clock(now_ns) => {
                    self.now_ns = self.now_ns.max(now_ns);
                    self.correlator.expire(self.now_ns);
                }
                Event::Opened { slot, key } => {
                    let slot = slot as usize;
                    if self.slots.len() <= slot {
                        self.slots.resize(slot + 1, None);
                    }
                    self.slots[slot] = Some((None, batch.keys[key as usize], None));
                }
                Event::Message(m) => {
                    if m.expire {
                        self.now_ns = self.now_ns.max(m.now_ns);
                        self.correlator.expire(self.now_ns);
                    }
                    let msg = FramedMessage {
                        bytes: batch.bytes(&m),
                        first_byte_ts_ns: m.first_byte_ts_ns,
                        last_byte_ts_ns: m.last_byte_ts_ns,
                        first_byte_seq: m.first_byte_seq,
                        last_byte_seq: m.last_byte_seq,
                    };
                    let Parts {
                        mut sink, slots, ..
                    } = self.parts();
                    if let Some((binding, key, tls)) = slots[m.slot as usize].as_mut() {
                        sink.router.on_message(m.direction, binding, *key, &msg);
                        if let (Some(info), Some(_)) = (*tls, *binding) {
                            super::routing::note_tls(sink.router.stats, *binding, info);
                            *tls = None;
                        }
                    }
                }
                Event::Hole { slot, direction } => {
                    if let Some((Some(b), _, _)) = self.slots[slot as usize] {
                        self.session_layer
                            .capture_hole(b, direction, &mut self.correlator);
                    }
                }
                Event::Closed { slot } => {
                    if let Some((Some(b), _, _)) = self.slots[slot as usize].take() {
                        self.session_layer.connection_closed(
                            b,
                            &mut self.correlator,
                            self.stats.session_table_mut(),
                        );
                    }
                }
                Event::Tls { slot, tls } => {
                    // Bound already (held records decrypted at the key): now; else at
                    // the connection's first message.
                    if let Some((binding, _, pending)) = self.slots[slot as usize].as_mut() {
                        match *binding {
                            Some(_) => super::routing::note_tls(&mut self.stats, *binding, tls),
                            None => *pending = Some(tls),
                        }
                    }
                }
                Event::IntervalEnd(i) => {
                    let mark = batch.intervals[i as usize];
                    self.upstream = Some(mark.upstream);
                    if !self.hand_over_interval(mark.start_ns, mark.end_ns, out) {
                        return ControlFlow::Break(());
                    }
                }
                Event::FileDone(i) => {
                    let (index, stats) = batch.files[i as usize];
                    if !out.send(ToReports::FileDone(index, Box::new(stats))) {
                        return ControlFlow::Break(());
                    }
                }
                Event::End => {
                    let Some(end) = batch.end.take() else {
                        continue;
                    };
                    self.upstream = Some(end.upstream);
                    self.first_ts_ns = end.first_ts_ns;
                    self.now_ns = self.now_ns.max(end.now_ns);
                    self.interval_clock.set_start_ns(end.interval_start_ns);
                    self.end_of_input();
                    let capture = StageEnd {
                        stats: end.stats,
                        error: end.error,
                        segments: end.segments,
                        stopped: end.stopped,
                    };
                    let end = self.hand_over_end(capture);
                    out.send(ToReports::End(end));
                    return ControlFlow::Break(());
                }
            }
        }
        // The orders done in this batch, to the records (one pipeline hands them per
        // segment: the same rows in the same order).
        if self.record_sink.is_some() {
            self.hand_records();
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::super::forward::{Back, EventBatch, Forwarder, BATCHES_IN_FLIGHT};
    use super::super::handover::IntervalToReport;
    use super::super::report_side::ReportSide;
    use super::super::robustness::{random_config, random_segments};
    use super::*;
    use crate::report::json::JsonReporter;
    use crate::segment::Segment;
    use crate::source::counters_of;

    /// Segments to a consumer.
    type Feed<'f> = &'f dyn Fn(&mut dyn FnMut(&Segment<'_>));

    /// The JSON reports of `feed`'s segments through one pipeline.
    fn one_pipeline(feed: Feed<'_>) -> Vec<u8> {
        let mut p = Pipeline::new(random_config());
        let mut r = JsonReporter::new(Vec::new());
        feed(&mut |seg| {
            if p.interval_due(seg.ts_ns) {
                p.report_due_intervals(seg.ts_ns, &[], &mut r).unwrap();
            }
            p.on_segment(seg);
        });
        p.finish(&counters_of(&CaptureStats::default()), &mut r)
            .unwrap();
        r.into_inner()
    }

    /// Stage B's hand-overs reported at once: the reporting side on this thread.
    struct ReportAtOnce {
        side: ReportSide,
        reporter: JsonReporter<Vec<u8>>,
        spare: Option<Box<IntervalToReport>>,
        ended: bool,
    }

    impl ReportsOut for ReportAtOnce {
        fn spare(&mut self) -> Option<Box<IntervalToReport>> {
            self.spare.take()
        }

        fn send(&mut self, message: ToReports) -> bool {
            match message {
                ToReports::Interval(mut handover) => {
                    self.side
                        .interval(&mut handover, &mut self.reporter)
                        .unwrap();
                    self.spare = Some(handover);
                }
                ToReports::FileDone(..) => {}
                ToReports::End(end) => {
                    self.side.end(*end, &mut self.reporter).unwrap();
                    self.ended = true;
                }
            }
            true
        }
    }

    /// The same through stage A, stage B and the reporting side (on this thread: each
    /// batch applied as soon as it is sent, each hand-over reported at once).
    fn two_stages(feed: Feed<'_>) -> Vec<u8> {
        let (full_tx, full_rx) = mpsc::sync_channel::<EventBatch>(BATCHES_IN_FLIGHT);
        let (back_tx, back_rx) = mpsc::sync_channel::<Back>(BATCHES_IN_FLIGHT);
        let mut a = Pipeline::new(random_config()).into_stage_a(Forwarder::new(full_tx, back_rx));
        let mut b = Pipeline::new(random_config()).into_stage_b();
        let mut out = ReportAtOnce {
            side: ReportSide::new(&random_config()),
            reporter: JsonReporter::new(Vec::new()),
            spare: None,
            ended: false,
        };
        let mut drain = |out: &mut ReportAtOnce| {
            while let Ok(mut batch) = full_rx.try_recv() {
                let flow = b.apply(&mut batch, out);
                assert_eq!(flow.is_break(), out.ended, "stage B stops at the end only");
                batch.clear();
                back_tx.send(Back::Batch(batch)).unwrap();
            }
        };
        let mut segments = 0;
        feed(&mut |seg| {
            segments += 1;
            a.stage_a_due_intervals(seg.ts_ns);
            a.on_segment(seg);
            drain(&mut out);
        });
        a.stage_a_finish(CaptureStats::default(), None, segments, false);
        drain(&mut out);
        assert!(out.ended, "the end came through");
        out.reporter.into_inner()
    }

    /// Two stages report one pipeline's bytes on random traffic: holes, retransmissions,
    /// resets and port reuse, `-t` expiring requests framed late, evictions, intervals
    /// every microsecond (every path of the hand-over, in every order).
    #[test]
    fn two_stages_report_one_pipelines_bytes_on_random_segments() {
        for seed in [1, 0x9e37_79b9_7f4a_7c15, 42] {
            let feed = |each: &mut dyn FnMut(&Segment<'_>)| random_segments(seed, 20_000, each);
            assert_same_bytes(&feed, &format!("seed {seed}"));
        }
    }

    fn assert_same_bytes(feed: Feed<'_>, what: &str) {
        {
            let one = one_pipeline(feed);
            let two = two_stages(feed);
            assert!(one.len() > 1_000);
            if one != two {
                let (one, two) = (String::from_utf8_lossy(&one), String::from_utf8_lossy(&two));
                let line = one.lines().zip(two.lines()).position(|(x, y)| x != y);
                panic!(
                    "{what}: line {line:?} differs:\n{:?}\n{:?}",
                    line.and_then(|l| one.lines().nth(l)),
                    line.and_then(|l| two.lines().nth(l))
                );
            }
        }
    }

    /// A request framed late (held behind a capture hole longer than `-t`, given up at a
    /// segment) and its response at that very nanosecond: one pipeline expires before
    /// every segment, so the request is timed out before it is answered (`late`) — the
    /// two stages too, though the clock did not move.
    #[test]
    fn a_request_framed_late_expires_before_a_response_at_the_same_clock() {
        use crate::fix::encode::test_message as fix;
        use crate::segment::{Endpoint, FlowKey, TcpFlags};
        let first = fix(&[(35, "D"), (11, "FIRST")]);
        let lost = fix(&[(35, "D"), (11, "LOST")]);
        let held = fix(&[(35, "D"), (11, "HELD")]);
        let ack = fix(&[(35, "8"), (11, "HELD"), (150, "0"), (39, "0")]);
        let ep = |port| Endpoint {
            addr: "10.0.0.1".parse().unwrap(),
            port,
        };
        let seg = |ts_ns, request: bool, seq: u32, payload: &'static [u8]| {
            let (src, dst) = if request {
                (ep(40000), ep(9878))
            } else {
                (ep(9878), ep(40000))
            };
            (ts_ns, FlowKey { src, dst }, request, seq, payload)
        };
        let [first, lost, held, ack]: [&'static [u8]; 4] =
            [first, lost, held, ack].map(|m| &*Box::leak(m.into_boxed_slice()));
        let [first_len, lost_len, held_len] = [first, lost, held].map(|m| m.len() as u32);
        let segments = [
            seg(100, true, 1, first), // opens the connection mid-stream
            seg(1_000, true, 1 + first_len + lost_len, held), // behind `lost`
            seg(20_000, true, 1 + first_len + lost_len + held_len, &[]), // gives it up
            seg(20_000, false, 1, ack),
        ];
        let feed = |each: &mut dyn FnMut(&Segment<'_>)| {
            for &(ts_ns, flow, request, seq, payload) in &segments {
                each(&Segment {
                    ts_ns,
                    flow,
                    direction: if request {
                        crate::Direction::Request
                    } else {
                        crate::Direction::Response
                    },
                    seq,
                    ack: 0,
                    flags: TcpFlags(TcpFlags::PSH),
                    payload,
                    missing_tail: 0,
                });
            }
        };
        let one = String::from_utf8(one_pipeline(&feed)).unwrap();
        assert!(
            one.contains("\"late\":1"),
            "the scenario makes a late answer: {one}"
        );
        // And latencies above `-x` (the answer's first response and ack: 19 µs).
        let summary: serde_json::Value = serde_json::from_str(one.lines().last().unwrap()).unwrap();
        assert_eq!(summary["counters"]["over_range"], 2, "{summary}");
        assert_same_bytes(&feed, "late request");
    }
}
