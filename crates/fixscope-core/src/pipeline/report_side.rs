//! Stage B → the reporting side of a two-stage run (`crate::twostage`).
//!
//! One pipeline closes, folds, reports and resets each interval on its own thread: about
//! a tenth of stage B's time at `-r 1` (BENCHMARKS.md §2f), and stage B bounds the run.
//! So stage B only hands each interval over — its recorders and slowest-order lists
//! swapped out whole, its counters, its message rates, the sessions it opened — and
//! starts the next; the reporting side, on stage A's thread (the calling thread, which
//! owns the reporters; stage A has time to spare), makes the one pipeline's report from
//! them and sends the recorders back.
//!
//! The reporting side's [`Stats`] hold what interval reports read (the interval's
//! recorders and slowest orders, the rates, the session ids) and the folded intervals; at
//! the end stage B's statistics (every per-session and session-layer figure) take those
//! folded intervals over ([`Stats::adopt_folded`]) and the last interval and the summary
//! are reported from them: one pipeline's statistics, so one pipeline's bytes (tested with
//! the stages in `stages.rs` and end to end in `tests/sharded.rs`).

use std::io;
use std::sync::mpsc::{Receiver, SyncSender};

use super::forward::{Back, EventBatch};
use super::handover::{EndToReport, IntervalToReport, ReportsOut, StageEnd, ToReports};
use super::{close_and_report_interval, report_end, Pipeline, PipelineConfig};
use crate::report::{Counters, Reporter};
use crate::source::counters_of;
use crate::stats::{IntervalHandOver, Stats};

/// Stage B's end of the channels back to stage A's thread.
pub(crate) struct ReportsChannel {
    pub(crate) back: SyncSender<Back>,
    pub(crate) spares: Receiver<Box<IntervalToReport>>,
}

impl ReportsChannel {
    /// Gives an emptied batch back; false once stage A's thread is gone.
    pub(crate) fn give_back(&mut self, batch: EventBatch) -> bool {
        self.back.send(Back::Batch(batch)).is_ok()
    }
}

impl ReportsOut for ReportsChannel {
    fn spare(&mut self) -> Option<Box<IntervalToReport>> {
        self.spares.try_recv().ok()
    }

    fn send(&mut self, message: ToReports) -> bool {
        self.back.send(Back::Report(message)).is_ok()
    }
}

impl Pipeline {
    /// Stage B at an interval's end (the one pipeline's `emit_interval`): hands the
    /// interval over and starts the next. False once the reporting side is gone.
    pub(crate) fn hand_over_interval(
        &mut self,
        start_ns: u64,
        end_ns: u64,
        out: &mut dyn ReportsOut,
    ) -> bool {
        let mut handover = out.spare().unwrap_or_else(|| {
            Box::new(IntervalToReport {
                span: self.run_end().span(0, 0),
                counters: Counters::default(),
                record_counters: Vec::new(),
                opened: Vec::new(),
                stats: IntervalHandOver::new(&self.stats),
            })
        });
        handover.span = self.run_end().span(start_ns, end_ns);
        handover.counters = self.counters();
        handover.record_counters = self.record_counters();
        handover.opened.clear();
        let sessions = self.stats.sessions();
        handover.opened.extend(
            sessions[self.sessions_handed_over.min(sessions.len())..]
                .iter()
                .map(|s| (s.id, s.connection)),
        );
        self.sessions_handed_over = sessions.len();
        self.stats.hand_over_interval(&mut handover.stats);
        out.send(ToReports::Interval(handover))
    }

    /// Stage B at the end (every stream flushed by stage A, its counters in place): its
    /// statistics and where the run stands, for the last reports.
    pub(crate) fn hand_over_end(&mut self, capture: StageEnd) -> Box<EndToReport> {
        // Before the statistics go: some counters are theirs (`over_range`), and read
        // from the empty ones left behind they were 0 (issue #47).
        let counters = self.counters();
        let empty = Stats::new(self.config.highest_ns);
        Box::new(EndToReport {
            stats: Box::new(std::mem::replace(&mut self.stats, empty)),
            counters,
            record_counters: self.record_counters(),
            end: self.run_end(),
            capture,
        })
    }
}

/// The reporting side: interval reports from stage B's hand-overs, then the end.
pub(crate) struct ReportSide {
    /// What interval reports read, and the intervals folded so far.
    stats: Stats,
    /// The counters at the end of the previous interval, for each interval's own counts.
    interval_start_counters: Counters,
    /// `--tls-keylog`: the TLS connections stage A could not decrypt.
    tls_undecrypted: Option<std::sync::Arc<crate::tls::UndecryptedConnections>>,
    /// `--md`: the feeds' health.
    feeds: std::sync::Arc<Vec<crate::report::feeds::FeedSummary>>,
}

impl ReportSide {
    pub(crate) fn new(config: &PipelineConfig) -> Self {
        ReportSide {
            // As `Pipeline::new` makes them: reports read the configuration (`--slowest`,
            // `--breakdown`'s stages) from the statistics.
            stats: Stats::with_config(config.consumers()),
            interval_start_counters: Counters::default(),
            tls_undecrypted: config.tls_undecrypted.clone(),
            feeds: config.feeds.clone(),
        }
    }

    /// Reports the interval handed over, as one pipeline would have (`report_interval`),
    /// and puts its recorders back in the hand-over for their return.
    pub(crate) fn interval(
        &mut self,
        handover: &mut IntervalToReport,
        reporter: &mut dyn Reporter,
    ) -> io::Result<()> {
        for (id, connection) in handover.opened.drain(..) {
            self.stats.open_session(id, connection);
        }
        self.stats.take_over_interval(&mut handover.stats);
        close_and_report_interval(
            &mut self.stats,
            handover.counters,
            &mut self.interval_start_counters,
            handover.span,
            &handover.record_counters,
            reporter,
        )?;
        self.stats.give_back_interval(&mut handover.stats);
        self.stats.reset_interval();
        Ok(())
    }

    /// The end's reports (the driver's: none when the run failed before any segment).
    pub(crate) fn end(
        &mut self,
        end: EndToReport,
        reporter: &mut dyn Reporter,
    ) -> io::Result<StageEnd> {
        let EndToReport {
            mut stats,
            counters,
            record_counters,
            end,
            capture,
        } = end;
        stats.adopt_folded(&mut self.stats);
        if capture.segments > 0 || capture.error.is_none() {
            let incomplete = crate::pcap::incomplete_reason(
                capture.error.as_ref().map(|e| e as &dyn std::fmt::Display),
                capture.stopped,
            );
            // As one pipeline's: the capture's counters, then the record sink's.
            let mut source = counters_of(&capture.stats);
            source.extend(record_counters);
            report_end(
                &mut stats,
                counters,
                &mut self.interval_start_counters,
                &end,
                &source,
                incomplete.as_deref(),
                self.tls_undecrypted.as_deref(),
                &self.feeds,
                reporter,
            )?;
        }
        Ok(capture)
    }
}
