//! The slowest orders as the terminal UI lists them: one row per order, ready to print.
//!
//! The view takes a slice of these rows, so whatever keeps the slowest orders only has to
//! turn each of its records into a [`SlowRow`].

use fixscope_core::correlate::Stage;

/// One slow order.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowRow {
    pub stage: Stage,
    pub latency_ns: u64,
    /// The correlation key's value (ClOrdID with the default `--key 11`).
    pub key: String,
    /// `SenderCompID->TargetCompID`, or `?` when not seen.
    pub session: String,
    /// `client -> server` addresses.
    pub addresses: String,
    /// When the request was seen, ISO-8601 UTC.
    pub request_utc: String,
    /// What answered it (e.g. `8/0 New`), or why nothing did.
    pub response: String,
}
