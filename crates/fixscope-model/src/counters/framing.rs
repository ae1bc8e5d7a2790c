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
    /// Connections whose first payload is a binary order protocol's login (a SoupBinTCP
    /// Login Request or Accepted; an iLink 3 Negotiate or Establish) this run does not
    /// measure: on a port named `fix`, in a run measuring what binary sessions lack
    /// (`--breakdown`, `--leg`, `--point`), or met by a worker of a plan that cannot read
    /// them on input it cannot read again — the port wants `--protocol PORTS=NAME`.
    pub unnamed_protocol_connections: u64,
}
