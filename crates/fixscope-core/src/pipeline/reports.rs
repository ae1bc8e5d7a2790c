//! The reports at an interval's end and at the run's end: one pipeline's, a sharded run's
//! merger and a two-stage run's reporting side all go through these functions.

use std::io;

use crate::report::{Counters, IntervalReport, Reporter, SummaryReport, TimeSpan};
use crate::source::Counter;
use crate::stats::Stats;

/// Reports the interval `span` from `stats` and `counters` (the counters at its start in
/// `start_counters`, updated), then starts the next interval: one pipeline's reports and a
/// sharded run's merged ones (`crate::shard`) go through this one function.
pub(crate) fn report_interval(
    stats: &mut Stats,
    counters: Counters,
    start_counters: &mut Counters,
    span: TimeSpan,
    source: &[Counter],
    reporter: &mut dyn Reporter,
) -> io::Result<()> {
    close_and_report_interval(stats, counters, start_counters, span, source, reporter)?;
    stats.reset_interval();
    Ok(())
}

/// [`report_interval`] but for the start of the next interval (`stats.reset_interval()`),
/// which is the caller's.
pub(crate) fn close_and_report_interval(
    stats: &mut Stats,
    counters: Counters,
    start_counters: &mut Counters,
    span: TimeSpan,
    source: &[Counter],
    reporter: &mut dyn Reporter,
) -> io::Result<()> {
    stats.close_interval();
    let report = IntervalReport::new(span, stats, counters, start_counters, source);
    reporter.interval(&report)?;
    *start_counters = counters;
    Ok(())
}

/// Where a run ended, for its last reports ([`report_end`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunEnd {
    pub(crate) interval_ns: u64,
    /// The current interval's start (`None`: no interval started).
    pub(crate) interval_start_ns: Option<u64>,
    pub(crate) first_ts_ns: Option<u64>,
    pub(crate) now_ns: u64,
    pub(crate) unix_offset_ns: i64,
    pub(crate) timestamp_source: Option<&'static str>,
}

impl RunEnd {
    pub(crate) fn span(&self, start_ns: u64, end_ns: u64) -> TimeSpan {
        TimeSpan {
            start_ns,
            end_ns,
            unix_offset_ns: self.unix_offset_ns,
            timestamp_source: self.timestamp_source,
        }
    }
}

/// The end's reports: the last partial interval (when it holds anything), then the
/// summary — one pipeline's `finish`, a sharded run's merger and a two-stage run's
/// reporting side all end through this one function.
// The three plans' ends each pass what only they hold; a struct for one call adds nothing.
#[allow(clippy::too_many_arguments)]
pub(crate) fn report_end(
    stats: &mut Stats,
    counters: Counters,
    start_counters: &mut Counters,
    end: &RunEnd,
    source: &[Counter],
    incomplete: Option<&str>,
    tls_undecrypted: Option<&crate::tls::UndecryptedConnections>,
    feeds: &[crate::report::feeds::FeedSummary],
    reporter: &mut dyn Reporter,
) -> io::Result<()> {
    if end.interval_ns > 0 {
        if let Some(start) = end.interval_start_ns {
            // Data stamped exactly at the interval's start (or counted at the flush
            // before) makes an interval too, however short: the intervals (an
            // HdrHistogram log) must hold every latency of the summary.
            let has_data = stats.interval_count() > 0 || counters != *start_counters;
            if end.now_ns > start || has_data {
                // The summary right after carries the source counters in full.
                let span = end.span(start, end.now_ns);
                report_interval(stats, counters, start_counters, span, &[], reporter)?;
            }
        }
    }
    stats.refresh_views();
    let span = end.span(end.first_ts_ns.unwrap_or(end.now_ns), end.now_ns);
    let mut summary = SummaryReport::new(stats, counters, source, span);
    summary.nothing_seen = end.first_ts_ns.is_none();
    summary.incomplete = incomplete.map(str::to_string);
    summary.tls_undecrypted = tls_undecrypted.map(|log| {
        log.sorted()
            .into_iter()
            .map(|(key, why)| (key.to_string(), why.name()))
            .collect()
    });
    summary.feeds = feeds.to_vec();
    reporter.summary(&summary)
}
