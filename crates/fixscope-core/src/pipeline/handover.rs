//! What stage B of a two-stage run hands the reporting side (`crate::twostage`): the data
//! only, so both sides depend on this file and not on each other.

use super::reports::RunEnd;
use crate::pcap::CaptureStats;
use crate::report::{Counters, TimeSpan};
use crate::segment::ConnectionKey;
use crate::source::Counter;
use crate::stats::{IntervalHandOver, Stats};

/// How a two-stage run ended, as stage B saw it.
pub(crate) struct StageEnd {
    pub(crate) stats: CaptureStats,
    pub(crate) error: Option<crate::pcap::CaptureError>,
    pub(crate) segments: u64,
    /// A stop (Ctrl-C) ended the reading before the end of the captures.
    pub(crate) stopped: bool,
}

/// Hand-overs queued for the reporting side: it keeps up (a report costs a tenth of an
/// interval's work), so this bounds only a stalled output's backlog.
pub(crate) const REPORTS_IN_FLIGHT: usize = 8;

/// What stage B hands the reporting side, in stream order.
pub(crate) enum ToReports {
    /// An interval ended.
    Interval(Box<IntervalToReport>),
    /// A file was read to its end (the driver's notice, for the progress bar and `-v`).
    FileDone(usize, Box<CaptureStats>),
    /// The run ended.
    End(Box<EndToReport>),
}

/// An interval, as stage B ended it.
pub(crate) struct IntervalToReport {
    pub(crate) span: TimeSpan,
    pub(crate) counters: Counters,
    /// The record sink's counters (`--records`; none without).
    pub(crate) record_counters: Vec<Counter>,
    /// The sessions stage B's table gained since the previous hand-over: `(id, connection)`.
    pub(crate) opened: Vec<(u64, ConnectionKey)>,
    pub(crate) stats: IntervalHandOver,
}

/// The end, as stage B saw it: its statistics whole (every interval but those handed over).
pub(crate) struct EndToReport {
    pub(crate) stats: Box<Stats>,
    pub(crate) counters: Counters,
    /// The record sink's counters at the end (`--records`; none without).
    pub(crate) record_counters: Vec<Counter>,
    pub(crate) end: RunEnd,
    pub(crate) capture: StageEnd,
}

/// Where stage B's hand-overs go.
pub(crate) trait ReportsOut {
    /// An emptied hand-over to refill, if one came back.
    fn spare(&mut self) -> Option<Box<IntervalToReport>>;
    /// False once the reporting side is gone (its output failed): stage B stops.
    fn send(&mut self, message: ToReports) -> bool;
}
