//! `--records`: the correlator's order records handed to a sink (the Parquet writer) with
//! what only the pipeline knows — the session's number and CompIDs, and the source clock's
//! offset to UTC.
//!
//! A sink observes one pipeline, as `--trace` does: records are a stream of rows, not
//! figures an interval hands over or shards add up, so they take no part in the consumer
//! registry's hand-overs (runs with records use one pipeline).

use crate::correlate::OrderRecord;
use crate::session::session_of;

/// One order's record, with its session's names and the request's UTC time.
#[derive(Clone, Copy, Debug)]
pub struct OrderRow<'a> {
    pub record: &'a OrderRecord,
    /// The run's session number (the reports' `session`).
    pub session: u64,
    pub sender_comp_id: &'a str,
    pub target_comp_id: &'a str,
    /// The request's time in UTC nanoseconds (`None`: seen only after a response).
    pub request_time_ns: Option<i64>,
}

/// One parent → child link of a router (`--leg`), with both sessions' names and the
/// source clock's offset to UTC.
#[derive(Clone, Copy, Debug)]
pub struct LinkRow<'a> {
    pub record: &'a crate::hops::LinkRecord,
    pub parent_sender_comp_id: &'a str,
    pub parent_target_comp_id: &'a str,
    pub child_sender_comp_id: &'a str,
    pub child_target_comp_id: &'a str,
    /// What turns the source's clock into UTC.
    pub unix_offset_ns: i64,
}

/// Where order records go (one call per request, when the order is done).
pub trait RecordSink {
    fn order(&mut self, row: &OrderRow<'_>);

    /// A router's link, when its parent is final (`--leg` only).
    fn link(&mut self, _row: &LinkRow<'_>) {}

    /// The wire is quiet (a live run's clock moved without traffic): time-based work —
    /// closing files every `--records-rotate`, handing rows to ClickHouse every second —
    /// happens even when no order ends.
    fn idle(&mut self) {}

    /// The run's last record was given: write everything (the summary reports after this,
    /// so the sink's counters in it are final).
    fn end(&mut self) {}

    /// What the sink lost so far, reported beside the source's counters (e.g.
    /// `records_dropped_rows`, `clickhouse_failed_rows`).
    fn counters(&self) -> Vec<crate::source::Counter> {
        Vec::new()
    }
}

/// The session of a record's correlator scope.
pub(crate) fn record_session(record: &OrderRecord) -> u64 {
    session_of(record.scope)
}
