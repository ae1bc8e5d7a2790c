//! Reports: what the pipeline tells the outside world, and the reporters that print it.
//!
//! The pipeline produces [`IntervalReport`]s (every `-r` seconds) and one [`SummaryReport`]
//! (cumulative, at the end or on demand). A [`Reporter`] turns them into an output: human
//! text, JSON lines — and later HdrHistogram logs, Prometheus, a TUI — without the pipeline
//! knowing which. Reports borrow the histograms, so a reporter can take what it needs
//! (an interval log wants the whole interval histogram) without copying on every interval.

pub mod json;
pub mod text;

use std::io;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::correlate::{RequestType, Stage};
use crate::stats::{Distribution, Stats};

/// Every pipeline counter (see docs/output-json.md for their meaning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub segments: u64,
    pub connections: u64,
    pub open_connections: u64,
    /// Connections dropped because more than the limit were open at once.
    pub shed_connections: u64,
    pub messages: u64,
    pub requests: u64,
    pub responses: u64,
    pub matched: u64,
    pub unmatched_responses: u64,
    pub duplicate_requests: u64,
    pub timed_out: u64,
    pub expired_after_response: u64,
    pub evicted: u64,
    pub pending: u64,
    pub missing_key: u64,
    pub time_reversed: u64,
    pub bad_checksum: u64,
    pub bad_body_length: u64,
    pub skipped_bytes: u64,
    pub tcp_gaps: u64,
    pub tcp_gap_bytes: u64,
    pub retransmitted_bytes: u64,
    pub out_of_order_segments: u64,
    pub over_range: u64,
}

/// One stage over one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalStage {
    pub stage: Stage,
    pub count: u64,
    pub rate_per_s: f64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
}

/// What happened in one interval `[start_ns, end_ns)`.
pub struct IntervalReport<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub stages: [IntervalStage; 4],
    pub counters: Counters,
    /// The source's own counters worth watching per interval (e.g. kernel ring drops).
    pub source: &'a [(&'static str, u64)],
    /// The interval's histogram per stage, indexed by [`Stage::index`].
    pub histograms: [&'a Histogram<u64>; 4],
}

impl<'a> IntervalReport<'a> {
    pub fn new(
        start_ns: u64,
        end_ns: u64,
        stats: &'a Stats,
        counters: Counters,
        source: &'a [(&'static str, u64)],
    ) -> Self {
        let seconds = (end_ns.saturating_sub(start_ns)) as f64 / 1e9;
        let stages = Stage::ALL.map(|stage| {
            let d = stats.interval(stage).distribution();
            IntervalStage {
                stage,
                count: d.count,
                rate_per_s: if seconds > 0.0 {
                    d.count as f64 / seconds
                } else {
                    0.0
                },
                min_ns: d.min_ns,
                mean_ns: d.mean_ns,
                max_ns: d.max_ns,
            }
        });
        IntervalReport {
            start_ns,
            end_ns,
            stages,
            counters,
            source,
            histograms: Stage::ALL.map(|s| stats.interval(s).histogram()),
        }
    }
}

/// One stage's cumulative distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageSummary {
    pub stage: Stage,
    pub dist: Distribution,
}

/// One session's line in the per-session table.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    pub id: u64,
    pub client: String,
    pub server: String,
    pub sender_comp_id: String,
    pub target_comp_id: String,
    pub requests: u64,
    pub responses: u64,
    pub first_response: Distribution,
}

/// The cumulative report.
pub struct SummaryReport<'a> {
    /// From the first to the last timestamp seen.
    pub duration_ns: u64,
    pub stages: [StageSummary; 4],
    /// Request types that had at least one latency recorded.
    pub by_request_type: Vec<(RequestType, [StageSummary; 4])>,
    pub sessions: Vec<SessionSummary>,
    pub untracked_sessions: u64,
    pub counters: Counters,
    /// The source's own counters (capture file or kernel), in display order.
    pub source: &'a [(&'static str, u64)],
    /// The cumulative histogram per stage, indexed by [`Stage::index`].
    pub histograms: [&'a Histogram<u64>; 4],
}

impl<'a> SummaryReport<'a> {
    pub fn new(
        stats: &'a Stats,
        counters: Counters,
        source: &'a [(&'static str, u64)],
        duration_ns: u64,
    ) -> Self {
        let stages = Stage::ALL.map(|stage| StageSummary {
            stage,
            dist: stats.cumulative(stage).distribution(),
        });
        let by_request_type = RequestType::ALL
            .iter()
            .map(|&t| {
                (
                    t,
                    Stage::ALL.map(|stage| StageSummary {
                        stage,
                        dist: stats.by_request_type(t, stage).distribution(),
                    }),
                )
            })
            .filter(|(_, s)| s.iter().any(|s| s.dist.count > 0))
            .collect();
        let sessions = stats
            .sessions()
            .iter()
            .map(|s| SessionSummary {
                id: s.id,
                client: s.connection.client.to_string(),
                server: s.connection.server.to_string(),
                sender_comp_id: s.sender_comp_id.clone(),
                target_comp_id: s.target_comp_id.clone(),
                requests: s.requests,
                responses: s.responses,
                first_response: s.first_response(),
            })
            .collect();
        SummaryReport {
            duration_ns,
            stages,
            by_request_type,
            sessions,
            untracked_sessions: stats.untracked_sessions(),
            counters,
            source,
            histograms: Stage::ALL.map(|s| stats.cumulative(s).histogram()),
        }
    }
}

/// An output of fixscope's figures.
pub trait Reporter {
    fn interval(&mut self, report: &IntervalReport<'_>) -> io::Result<()>;
    fn summary(&mut self, report: &SummaryReport<'_>) -> io::Result<()>;
}

/// Sends every report to several reporters (e.g. text on stdout and an interval log file).
#[derive(Default)]
pub struct Fanout<'r> {
    reporters: Vec<&'r mut dyn Reporter>,
}

impl<'r> Fanout<'r> {
    pub fn new() -> Self {
        Fanout::default()
    }

    pub fn add(&mut self, reporter: &'r mut dyn Reporter) {
        self.reporters.push(reporter);
    }
}

impl Reporter for Fanout<'_> {
    fn interval(&mut self, report: &IntervalReport<'_>) -> io::Result<()> {
        self.reporters
            .iter_mut()
            .try_for_each(|r| r.interval(report))
    }
    fn summary(&mut self, report: &SummaryReport<'_>) -> io::Result<()> {
        self.reporters
            .iter_mut()
            .try_for_each(|r| r.summary(report))
    }
}

/// Formats nanoseconds for people: `850ns`, `12.3us`, `4.56ms`, `1.234s`.
pub fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}
