//! Reports: what the pipeline tells the outside world, and the reporters that print it.
//!
//! The pipeline produces [`IntervalReport`]s (every `-r` seconds) and one [`SummaryReport`]
//! (cumulative, at the end or on demand). A [`Reporter`] turns them into an output: human
//! text, JSON lines — and later HdrHistogram logs, Prometheus, a TUI — without the pipeline
//! knowing which. Reports borrow the histograms, so a reporter can take what it needs
//! (an interval log wants the whole interval histogram) without copying on every interval.

pub mod by;
pub mod counter_kinds;
pub mod feeds;
mod hops;
pub mod json;
mod json_line;
mod points;
mod rows;
pub mod session;
pub mod text;
pub mod text_brief;
mod text_parts;

use std::io;

use hdrhistogram::Histogram;

use fixscope_figures::figures::Figures;
use fixscope_figures::stats::{Distribution, Stats};
use fixscope_model::source::Counter;
use fixscope_orders::consumers::SessionLatency;
use fixscope_orders::correlate::{RequestType, Stage};
use fixscope_orders::slowest::SlowOrder;

pub use fixscope_model::counters::Counters;
/// The session layer's figures (defined with the session layer; reports render them).
pub use fixscope_orders::session::figures as session_figures;

/// When a report's figures were taken, in the source's clock and as UNIX time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeSpan {
    /// In the source's clock (pcap: UNIX ns; live: CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    pub end_ns: u64,
    /// Add to a source timestamp to get UNIX ns ([`fixscope_model::source::Source::unix_offset_ns`]).
    pub unix_offset_ns: i64,
    /// Who stamped the packets, when the source says (`live --tap`: `host`, `adapter`,
    /// `adapter_unsynced`): every output names it, so runs stamped differently are never
    /// compared unknowingly.
    pub timestamp_source: Option<&'static str>,
}

impl TimeSpan {
    pub fn seconds(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }

    /// The start as ISO-8601 UTC (`2026-11-23T18:07:00.123456789Z`).
    pub fn start_utc(&self) -> String {
        utc(self.start_ns, self.unix_offset_ns)
    }

    /// The end as ISO-8601 UTC.
    pub fn end_utc(&self) -> String {
        utc(self.end_ns, self.unix_offset_ns)
    }
}

/// A source timestamp as ISO-8601 UTC (the clock's; kept here for the reporters' callers).
pub use fixscope_model::clock::utc;

/// One stage over one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalStage {
    pub stage: Stage,
    pub count: u64,
    pub rate_per_s: f64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    /// The interval's percentiles ([`fixscope_figures::stats::PERCENTILES`]); `None` above `-x`.
    pub percentiles_ns: [Option<u64>; 6],
    pub over_range: u64,
}

/// What happened in one interval `[start_ns, end_ns)`.
pub struct IntervalReport<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub span: TimeSpan,
    pub stages: [IntervalStage; 4],
    /// Cumulative counters at the end of the interval.
    pub counters: Counters,
    /// What each counter added during this interval (e.g. requests that reached `-t`
    /// without a response in it: `timed_out`).
    pub delta: Counters,
    /// The source's own counters worth watching per interval (e.g. kernel ring drops).
    pub source: &'a [Counter],
    /// The interval's slowest orders per stage (`--slowest`), slowest first, indexed by
    /// [`Stage::index`]; each carries its session's names and addresses.
    pub slowest: [&'a [SlowOrder]; 4],
    /// The breakdown stages (`--breakdown`; empty without it), in [`Stage::BREAKDOWN`]
    /// order; their histograms and slowest orders: [`IntervalReport::histogram`],
    /// [`IntervalReport::slowest_of`].
    pub breakdown: Vec<IntervalStage>,
    /// Everything recorded, for reporters that need more than the above (the HdrHistogram
    /// log: exact sums and the interval per request type; Prometheus: the cumulative views
    /// per stage, request type and session).
    /// Every figure of the run, read-only.
    pub figures: Figures<'a>,
}

impl<'a> IntervalReport<'a> {
    pub fn new(
        span: TimeSpan,
        stats: &'a Stats,
        counters: Counters,
        previous: &Counters,
        source: &'a [Counter],
    ) -> Self {
        let figures = stats.figures();
        let seconds = span.seconds();
        let interval_stage = |stage: Stage| {
            let d = figures.interval(stage).distribution();
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
                percentiles_ns: d.percentiles_ns,
                over_range: d.over_range,
            }
        };
        let stages = Stage::ALL.map(interval_stage);
        // Not the one-way stages (`--point`): their uncertainty is the run's, so they are
        // the summary's only (with it).
        let breakdown = figures.shown_stages()[Stage::ALL.len()..]
            .iter()
            .filter(|s| !s.is_one_way())
            .map(|&s| interval_stage(s))
            .collect();
        IntervalReport {
            start_ns: span.start_ns,
            end_ns: span.end_ns,
            span,
            stages,
            delta: counters.minus(previous),
            counters,
            source,
            slowest: Stage::ALL.map(|s| figures.interval_slowest(s)),
            breakdown,
            figures,
        }
    }

    /// Every stage shown, the order-latency stages then the breakdown ones.
    pub fn all_stages(&self) -> impl Iterator<Item = &IntervalStage> {
        self.stages.iter().chain(&self.breakdown)
    }

    /// The interval's histogram of any stage, as hdrhistogram's type: built when first
    /// asked (a report nobody reads a histogram of builds none).
    pub fn histogram(&self, stage: Stage) -> &'a Histogram<u64> {
        self.figures.interval(stage).histogram()
    }

    /// The interval's slowest orders of any stage.
    pub fn slowest_of(&self, stage: Stage) -> &'a [SlowOrder] {
        self.figures.interval_slowest(stage)
    }
}

/// One stage's cumulative distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageSummary {
    pub stage: Stage,
    pub dist: Distribution,
}

/// Marks the sessions whose CompIDs another session (another BeginString) has too: only
/// they are named with their BeginString, so the common case reads as it always did.
pub fn mark_shared_comp_ids(sessions: &mut [SessionSummary]) {
    let mut seen: std::collections::HashMap<(&str, &str), usize> = Default::default();
    for s in sessions.iter().filter(|s| !s.sender_comp_id.is_empty()) {
        *seen
            .entry((&s.sender_comp_id, &s.target_comp_id))
            .or_default() += 1;
    }
    let shared: Vec<bool> = sessions
        .iter()
        .map(|s| {
            seen.get(&(&*s.sender_comp_id, &*s.target_comp_id))
                .is_some_and(|&n| n > 1)
        })
        .collect();
    for (s, shared) in sessions.iter_mut().zip(shared) {
        s.shares_comp_ids = shared;
    }
}

/// One session's line in the per-session table.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    pub id: u64,
    pub client: String,
    pub server: String,
    /// BeginString (8): with the CompIDs, the session's identity (empty: anonymous).
    pub begin_string: String,
    pub sender_comp_id: String,
    pub target_comp_id: String,
    /// Another session of the table has the same CompIDs (another BeginString): the text
    /// names show the BeginString to tell them apart ([`mark_shared_comp_ids`]).
    pub shares_comp_ids: bool,
    pub requests: u64,
    pub responses: u64,
    pub first_response: Distribution,
    /// The session's breakdown stages (`--breakdown`; empty without it).
    pub breakdown: Vec<StageSummary>,
    /// `--tls-keylog`: its TLS version and cipher suite (`None`: plain FIX).
    pub tls: Option<fixscope_streams::tls::TlsSession>,
}

/// The cumulative report.
pub struct SummaryReport<'a> {
    /// From the first to the last timestamp seen.
    pub duration_ns: u64,
    pub span: TimeSpan,
    /// No segment of the watched ports was seen: `span` holds no time (outputs show none,
    /// never the epoch).
    pub nothing_seen: bool,
    /// Why the source was not read to its end (a damaged capture, a stop before the end of
    /// the captures): the figures are a prefix. `None`: complete.
    pub incomplete: Option<String>,
    pub stages: [StageSummary; 4],
    /// Request types that had at least one latency recorded.
    pub by_request_type: Vec<(RequestType, [StageSummary; 4])>,
    pub sessions: Vec<SessionSummary>,
    pub untracked_sessions: u64,
    pub counters: Counters,
    /// The source's own counters (capture file or kernel), in display order.
    pub source: &'a [Counter],
    /// The cumulative histogram per stage (values in range), indexed by [`Stage::index`].
    pub histograms: [&'a Histogram<u64>; 4],
    /// The run's slowest orders per stage (`--slowest`), slowest first, indexed by
    /// [`Stage::index`]; each carries its session's names and addresses.
    pub slowest: [&'a [SlowOrder]; 4],
    /// The breakdown stages (`--breakdown`; empty without it), in [`Stage::BREAKDOWN`]
    /// order; histograms and slowest orders: [`SummaryReport::histogram`],
    /// [`SummaryReport::slowest_of`].
    pub breakdown: Vec<StageSummary>,
    /// Everything recorded (the cumulative views are fresh).
    /// Every figure of the run, read-only.
    pub figures: Figures<'a>,
    /// `--tls-keylog`: each TLS connection not decrypted (`client -> server`) and why
    /// (`no_key`, `no_handshake`, `unsupported`); `None` without TLS decryption.
    pub tls_undecrypted: Option<Vec<(String, &'static str)>>,
    /// `--md`: the market-data feeds' health (empty without it).
    pub feeds: Vec<feeds::FeedSummary>,
}

impl<'a> SummaryReport<'a> {
    pub fn new(
        stats: &'a Stats,
        counters: Counters,
        source: &'a [Counter],
        span: TimeSpan,
    ) -> Self {
        let figures = stats.figures();
        let duration_ns = span.end_ns.saturating_sub(span.start_ns);
        let stages = Stage::ALL.map(|stage| StageSummary {
            stage,
            dist: figures.cumulative(stage).distribution(),
        });
        let breakdown_stages = &figures.shown_stages()[Stage::ALL.len()..];
        let by_request_type = RequestType::ALL
            .iter()
            .map(|&t| {
                (
                    t,
                    Stage::ALL.map(|stage| StageSummary {
                        stage,
                        dist: figures.by_request_type(t, stage).distribution(),
                    }),
                )
            })
            .filter(|(_, s)| s.iter().any(|s| s.dist.count > 0))
            .collect();
        let sessions = figures
            .sessions()
            .iter()
            .map(|s| (s, figures.session_latency(s.id)))
            .map(|(s, latency)| SessionSummary {
                id: s.id,
                client: s.connection.client.to_string(),
                server: s.connection.server.to_string(),
                begin_string: s.begin_string.clone(),
                sender_comp_id: s.sender_comp_id.clone(),
                target_comp_id: s.target_comp_id.clone(),
                shares_comp_ids: false,
                requests: s.requests,
                responses: s.responses,
                first_response: latency
                    .map(SessionLatency::first_response)
                    .unwrap_or_default(),
                breakdown: breakdown_stages
                    .iter()
                    .map(|&stage| StageSummary {
                        stage,
                        dist: latency.map(|l| l.breakdown(stage)).unwrap_or_default(),
                    })
                    .collect(),
                tls: s.tls,
            })
            .collect::<Vec<_>>();
        let mut sessions = sessions;
        mark_shared_comp_ids(&mut sessions);
        SummaryReport {
            duration_ns,
            span,
            nothing_seen: false,
            incomplete: None,
            stages,
            by_request_type,
            sessions,
            untracked_sessions: figures.untracked_sessions(),
            counters,
            source,
            histograms: Stage::ALL.map(|s| figures.cumulative(s).histogram()),
            slowest: Stage::ALL.map(|s| figures.slowest(s)),
            breakdown: breakdown_stages
                .iter()
                .map(|&stage| StageSummary {
                    stage,
                    dist: figures.cumulative(stage).distribution(),
                })
                .collect(),
            figures,
            tls_undecrypted: None,
            feeds: Vec::new(),
        }
    }

    /// Every stage shown, the order-latency stages then the breakdown ones.
    pub fn all_stages(&self) -> impl Iterator<Item = &StageSummary> {
        self.stages.iter().chain(&self.breakdown)
    }

    /// The run's histogram of any stage.
    pub fn histogram(&self, stage: Stage) -> &'a Histogram<u64> {
        self.figures.cumulative(stage).histogram()
    }

    /// The first and last timestamps seen as ISO-8601 UTC; `None` when nothing was seen.
    pub fn times_utc(&self) -> Option<(String, String)> {
        (!self.nothing_seen).then(|| (self.span.start_utc(), self.span.end_utc()))
    }

    /// The run's slowest orders of any stage.
    pub fn slowest_of(&self, stage: Stage) -> &'a [SlowOrder] {
        self.figures.slowest(stage)
    }
}

/// An output of fixscope's figures.
pub trait Reporter {
    fn interval(&mut self, report: &IntervalReport<'_>) -> io::Result<()>;
    fn summary(&mut self, report: &SummaryReport<'_>) -> io::Result<()>;
}

/// Sends every report to several reporters it owns (text on stdout and JSON to a file,
/// later an HdrHistogram log, Prometheus, a terminal UI), chosen from the flags in one place.
#[derive(Default)]
pub struct Fanout {
    reporters: Vec<Box<dyn Reporter>>,
}

impl Fanout {
    pub fn new() -> Self {
        Fanout::default()
    }

    pub fn add(&mut self, reporter: Box<dyn Reporter>) {
        self.reporters.push(reporter);
    }

    pub fn len(&self) -> usize {
        self.reporters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reporters.is_empty()
    }
}

impl Reporter for Fanout {
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

pub use fixscope_model::human::human_ns;
