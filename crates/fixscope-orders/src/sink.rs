//! The pipeline's outward seam: what it hands to the world a row or a message at a time.
//!
//! An order's record and a router's link go to a [`RecordSink`] (`--records`' Parquet and
//! ClickHouse writers, the far point's own pipeline); every framed request and response goes
//! to a [`MessageObserver`] (`--trace`, `--point`). Defined below the pipeline, so a feature
//! that consumes them (the points' far side) never has to know the pipeline that feeds it.

use crate::correlate::OrderRecord;
use fixscope_model::segment::Direction;

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
    pub record: &'a fixscope_model::order::LinkRecord,
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
    fn counters(&self) -> Vec<fixscope_model::source::Counter> {
        Vec::new()
    }
}

/// One framed request or response, for `--trace` (cross-checks against engine logs and
/// other tools).
#[derive(Clone, Copy, Debug)]
pub struct MessageEvent<'a> {
    /// The timing rule's time: last byte for requests, first byte for responses.
    pub ts_ns: u64,
    pub session: u64,
    pub direction: Direction,
    pub msg_type: &'a [u8],
    /// The correlation key's value (tag values joined by SOH); empty when absent.
    pub key: &'a [u8],
    /// What turns the source's clock into UTC (`ts_ns + unix_offset_ns`).
    pub unix_offset_ns: i64,
    /// The message's own CompIDs (49, 56), MsgSeqNum (34) and PossDupFlag (43): who it is
    /// at any point that saw it (`--point`'s trace columns).
    pub sender_comp_id: &'a [u8],
    pub target_comp_id: &'a [u8],
    pub msg_seq_num: u32,
    pub poss_dup: bool,
}

/// Receives every correlated message when tracing is on.
pub type MessageObserver = Box<dyn FnMut(&MessageEvent<'_>)>;
