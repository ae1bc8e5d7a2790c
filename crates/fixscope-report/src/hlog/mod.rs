//! HdrHistogram interval logs (`--hlog FILE`), percentile distributions (`--hgrm FILE`) and
//! reading logs back (`fixscope report`, plots).
//!
//! The log is the standard one HdrHistogram's Java `HistogramLogProcessor`, its Python
//! and Rust readers and the web plotters read: Java-style header lines, one line per
//! interval and tag with a compressed V2 histogram (`V2DeflateSerializer`, base64),
//! values in ns. Tags: one per stage (`Tag=first_response`, `Tag=ack`, `Tag=fill`,
//! `Tag=ack_to_fill`) and per stage and request type (`Tag=first_response.D`, `.F`, `.G`);
//! an untagged line repeats `first_response` for tools that read no tags. With `--by`, each
//! reported value's whole run, per stage, at the end (`Tag=first_response.55=AAPL`, after a
//! `#fixscope-by` line with its exact figures).
//!
//! Beside the histograms, `#fixscope-…` comment lines (which those readers skip) keep what
//! a histogram cannot: exact count, sum, min, max and the values above fixscope's range
//! (`-x`) per tag, the counters per interval, and the run's summary — so reading a log back
//! reproduces the run's summary exactly; each interval's line also carries its slowest orders
//! (`--slowest`), so the run's slowest orders are the slowest of the intervals'. The format is
//! docs/output-hlog.md.
//!
//! Values above the range are never dropped: in the log's histogram they are recorded at the
//! interval's exact maximum (which is at least as large as each of them, so no reader sees a
//! better tail than there was), and the `#fixscope-interval` line says how many there were, so
//! fixscope takes them out again and reports them as above range.

mod format;
mod hgrm;
mod merge;
mod reader;
mod writer;

pub use format::{
    parse_value_tag, stage_tag, type_tag, value_tag, ByLine, ByRow, Continued, Exact,
    IntervalFigures, LogHeader, RunSummary, SessionLine, SlowLine, TagKind, LOG_VERSION,
};
pub use hgrm::{hgrm_paths, write_hgrm, HgrmWriter, HGRM_UNIT_RATIO};
pub use merge::{merge, merge_with, Merged, TimeBound, Window};
pub use reader::{read, Entry, HistogramLog, HlogError, LogInterval, LogReader};
pub use writer::HlogWriter;

#[cfg(test)]
mod tests;
