//! A router's links as `--records` keeps them (the `links` table): one row per parent →
//! child link, once the parent is forgotten (its window and its answer's wait have passed,
//! so every figure of it is final). Ambiguous and unlinked parents make no row; the
//! `orders` table has every order, linked or not.

use super::RequestType;

/// One parent → child link, with the hops measured for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkRecord {
    pub parent_session: u64,
    pub parent_key: Vec<u8>,
    pub parent_request_type: RequestType,
    /// When the parent came in (the source's clock).
    pub parent_ts_ns: u64,
    /// The parent's first response out.
    pub parent_first_response_ns: Option<u64>,
    pub child_session: u64,
    pub child_key: Vec<u8>,
    /// When the child went out.
    pub child_ts_ns: u64,
    /// The venue's first response to the child.
    pub child_venue_first_ns: Option<u64>,
    /// The `--link` rule the parent's first child linked by.
    pub rule: String,
    /// The parent's children (fan-out).
    pub children: u32,
    /// The parent's `hop_back` (the same on each of its rows); `None` when not measured
    /// (no answer yet, a capture hole, a reordered capture, a local ack).
    pub hop_back_ns: Option<u64>,
    /// The parent's first response was not the router's answer to the venue.
    pub local_ack: Option<bool>,
}

impl LinkRecord {
    /// The parent in → this child out.
    pub fn hop_out_ns(&self) -> u64 {
        self.child_ts_ns - self.parent_ts_ns
    }

    /// This child out → the venue's first response to it.
    pub fn venue_rtt_ns(&self) -> Option<u64> {
        self.child_venue_first_ns
            .and_then(|v| v.checked_sub(self.child_ts_ns))
    }

    /// The parent in → its first response out.
    pub fn client_rtt_ns(&self) -> Option<u64> {
        self.parent_first_response_ns
            .and_then(|f| f.checked_sub(self.parent_ts_ns))
    }
}
