//! `--records`: the correlator's order records handed to a sink (the Parquet writer) with
//! what only the pipeline knows — the session's number and CompIDs, and the source clock's
//! offset to UTC.
//!
//! A sink observes one pipeline, as `--trace` does: records are a stream of rows, not
//! figures an interval hands over or shards add up, so they take no part in the consumer
//! registry's hand-overs (runs with records use one pipeline).

use crate::correlate::OrderRecord;
use crate::session::session_of;

/// The session of a record's correlator scope.
pub(crate) fn record_session(record: &OrderRecord) -> u64 {
    session_of(record.scope)
}
