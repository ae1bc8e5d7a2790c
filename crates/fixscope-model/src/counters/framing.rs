//! The FIX framer's counters (`fixscope_core::fix::framing`).

/// Framing counters, kept per pipeline (the names are the JSON's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
// Deserialize: `fixscope report` reads the counters back from HdrHistogram logs; a counter
// missing from an older log reads as 0.
#[serde(default)]
pub struct FramingCounters {
    /// FIX messages framed (all types, both directions, checksum good or bad).
    pub messages: u64,
    pub bad_checksum: u64,
    pub bad_body_length: u64,
    /// Bytes skipped while looking for the next `8=FIX` (garbage, or after a TCP gap).
    pub skipped_bytes: u64,
    /// Messages begun before a TCP gap and never completed: dropped, never timed (their
    /// rest, after the gap, is in `skipped_bytes`).
    pub gap_cut_messages: u64,
    /// Connections on a port read as FIX whose first payload is a binary order protocol's
    /// login (a SoupBinTCP Login Request or Accepted; an iLink 3 Negotiate or Establish):
    /// not FIX, so not measured — the port wants `--protocol PORTS=NAME`. Never guessed
    /// into a protocol: OUCH's login does not say its version.
    pub unnamed_protocol_connections: u64,
}
