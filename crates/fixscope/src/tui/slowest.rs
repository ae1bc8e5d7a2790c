//! The slowest orders as the terminal UI lists them: one row per order, ready to print.
//!
//! The view takes a slice of these rows, so whatever keeps the slowest orders only has to
//! turn each of its records into a [`SlowRow`].

use fixscope_core::correlate::Stage;
use fixscope_core::report::utc;
use fixscope_core::slowest::SlowOrder;

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

/// A slow order and the report's clock offset (`TimeSpan::unix_offset_ns`: live timestamps
/// are CLOCK_MONOTONIC, so the request's UTC time needs it), as the view shows it: the
/// same fields as the text summary's slowest orders.
impl From<(&SlowOrder, i64)> for SlowRow {
    fn from((o, unix_offset_ns): (&SlowOrder, i64)) -> Self {
        let session = if o.sender_comp_id.is_empty() {
            "?".to_string()
        } else {
            format!("{}->{}", o.sender_comp_id, o.target_comp_id)
        };
        let mut response = o.response_msg_type.clone();
        for c in [o.exec_type, o.ord_status].into_iter().flatten() {
            response.push('/');
            response.push(c);
        }
        if o.late {
            response.push_str(" (late)");
        }
        if let Some(b) = o.breakdown {
            // `--breakdown`: where the order's time went ("-": not measured).
            for stage in Stage::BREAKDOWN {
                let v = b.get(stage).map_or("-".to_string(), |ns| {
                    fixscope_core::report::human_ns(ns as f64)
                });
                response.push_str(&format!(" {} {v}", stage.name()));
            }
        }
        SlowRow {
            stage: o.stage,
            latency_ns: o.latency_ns,
            key: o.key.clone(),
            session,
            addresses: o
                .connection
                .map_or("?".to_string(), |c| format!("{} -> {}", c.client, c.server)),
            request_utc: utc(o.request_ts_ns, unix_offset_ns),
            response,
        }
    }
}
