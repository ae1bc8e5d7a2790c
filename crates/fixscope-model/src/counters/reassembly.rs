//! TCP reassembly's counters (`fixscope_core::reassembly`).

/// Reassembly statistics, summed over streams (the serde names are the JSON's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
// Deserialize: `fixscope report` reads the counters back from HdrHistogram logs; a counter
// missing from an older log reads as 0.
#[serde(default)]
pub struct ReassemblyCounters {
    /// Payload bytes seen again (retransmissions and overlaps), counted once.
    pub retransmitted_bytes: u64,
    /// Segments that arrived ahead of a hole.
    pub out_of_order_segments: u64,
    /// Holes given up on (lost segments, capture drops, snaplen cuts).
    #[serde(rename = "tcp_gaps")]
    pub gaps: u64,
    /// Stream bytes never seen because of gaps.
    #[serde(rename = "tcp_gap_bytes")]
    pub gap_bytes: u64,
}
