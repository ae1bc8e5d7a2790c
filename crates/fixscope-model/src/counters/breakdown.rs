//! The in-host breakdown's counters (`--breakdown`, `fixscope_core::breakdown`): defined here,
//! below every layer that counts, reports or reads them back.

use serde::Serialize;

/// Breakdown counters (the names are the JSON's; docs/output-json.md has their meaning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BreakdownCounters {
    /// Socket calls (reads and writes) the source handed over.
    pub breakdown_calls: u64,
    /// Socket calls that fell out of a connection's log (the last `MAX_CALLS` per
    /// connection, direction and kind are kept; the oldest go, normally long used).
    pub breakdown_calls_evicted: u64,
    /// Matched orders whose breakdown was recorded.
    pub breakdown_orders: u64,
    /// Matched orders given up without a breakdown: a socket call never came (the calls
    /// seen were `AWAIT_NS` past the order), `MAX_AWAITING` orders waited, a reused
    /// port, or the run ended.
    pub breakdown_missing: u64,
    /// Orders whose stages would be negative (clock or ordering anomaly): none recorded.
    pub breakdown_negative: u64,
    /// Orders without `sched_delay`: the reading thread had no wakeup after the request
    /// reached the wire (it was running or already awake), or the kernel saw none.
    pub sched_delay_not_waiting: u64,
}

/// Reads [`BreakdownCounters`] flattened among others (an HdrHistogram log's counters):
/// `None` when the log has none of them (a run without `--breakdown`), so `fixscope
/// report` shows them only for runs that had them.
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<BreakdownCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Maybe {
        breakdown_calls: Option<u64>,
        breakdown_calls_evicted: Option<u64>,
        breakdown_orders: Option<u64>,
        breakdown_missing: Option<u64>,
        breakdown_negative: Option<u64>,
        sched_delay_not_waiting: Option<u64>,
    }
    let m = Maybe::deserialize(d)?;
    let any = m.breakdown_calls.is_some() || m.breakdown_orders.is_some();
    Ok(any.then(|| BreakdownCounters {
        breakdown_calls: m.breakdown_calls.unwrap_or(0),
        breakdown_calls_evicted: m.breakdown_calls_evicted.unwrap_or(0),
        breakdown_orders: m.breakdown_orders.unwrap_or(0),
        breakdown_missing: m.breakdown_missing.unwrap_or(0),
        breakdown_negative: m.breakdown_negative.unwrap_or(0),
        sched_delay_not_waiting: m.sched_delay_not_waiting.unwrap_or(0),
    }))
}
