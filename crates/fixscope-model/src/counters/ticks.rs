//! Tick-to-trade (`--tick-link`): every answered order lands in exactly one count,
//! `ticks_orders = ticks_linked + ticks_no_sequence + ticks_not_in_feed + ticks_ambiguous
//! + ticks_after_order` (docs/market-data.md has the rule).

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TickCounters {
    /// Orders answered (their first response seen) that the rule was tried on.
    pub ticks_orders: u64,
    /// Orders linked to the market-data packet their id names: `tick_to_order` and
    /// `tick_to_ack` measured.
    pub ticks_linked: u64,
    /// Orders whose id holds no sequence number where the rule reads it (too short, not
    /// digits).
    pub ticks_no_sequence: u64,
    /// Orders naming a sequence number the feed never carried in the capture (before its
    /// start, lost on every feed, another feed's).
    pub ticks_not_in_feed: u64,
    /// Orders naming a sequence number carried more than once before them (the feed's
    /// session changed or its channel reset and the number came again): never guessed.
    pub ticks_ambiguous: u64,
    /// Orders whose named packet arrived only after them: no reaction, a wrong rule or
    /// a wrong clock.
    pub ticks_after_order: u64,
}

/// Reads [`TickCounters`] flattened among others: `None` when there are none.
pub fn counters_if_present<'de, D>(d: D) -> Result<Option<TickCounters>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Maybe {
        ticks_orders: Option<u64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let m = Maybe::deserialize(d)?;
    let Some(first) = m.ticks_orders else {
        return Ok(None);
    };
    let mut all = m.rest;
    all.insert("ticks_orders".into(), first.into());
    Ok(serde_json::from_value(serde_json::Value::Object(all)).ok())
}
