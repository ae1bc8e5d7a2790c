//! Order events: what the correlation layer hands to every consumer (`fixscope_core::consumer`).
//!
//! One event per latency an order makes (request → first response, ack, fill, ack → fill,
//! and the `--breakdown` stages): the [`Latency`] with what the response side knows of the
//! order ([`OrderRef`], borrowed: copied only by a consumer that keeps it). The types here
//! depend on nothing above the correlation layer, so every consumer can read them and none
//! has to know another.

use serde::Serialize;

use crate::segment::ConnectionKey;

mod link_record;
mod vocabulary;
pub use link_record::LinkRecord;
pub use vocabulary::{RequestType, Stage};

/// The most tags `--by` takes (their ids fill the spare bytes of a pending request's slot).
pub const MAX_BY_TAGS: usize = 3;
/// A value id: an index into the tag's candidates, or one of these.
pub type GroupId = u16;
/// The tag was absent (from the request; the response is then asked).
pub const NO_GROUP: GroupId = u16::MAX;
/// First seen after the candidates were full.
pub const OTHER_GROUP: GroupId = u16::MAX - 1;
/// One id per `--by` tag.
pub type Groups = [GroupId; MAX_BY_TAGS];
/// No `--by`, or none of its tags present.
pub const NO_GROUPS: Groups = [NO_GROUP; MAX_BY_TAGS];

/// One latency produced by a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    pub stage: Stage,
    pub request_type: RequestType,
    pub session: u64,
    pub ns: u64,
    /// The request came before `-t` ran out for it (first response: it was `late`).
    pub late: bool,
    /// When the order's request was seen (for `ack_to_fill` too), in the source's clock.
    pub request_ts_ns: u64,
    /// TCP sequence number of the request's last byte (`--breakdown` places it on the
    /// stream; 0 when the caller gave none).
    pub request_seq: u32,
    /// The order's `--by` value ids (`fixscope_core::group`).
    pub groups: Groups,
}

/// One order's breakdown (the slowest orders carry it); `None`: not measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OrderBreakdown {
    pub wire_to_read: Option<u64>,
    pub app: Option<u64>,
    pub write_to_wire: Option<u64>,
    pub sched_delay: Option<u64>,
}

impl OrderBreakdown {
    /// The value of one breakdown stage (`None` for the others).
    pub fn get(&self, stage: Stage) -> Option<u64> {
        match stage {
            Stage::WireToRead => self.wire_to_read,
            Stage::App => self.app,
            Stage::WriteToWire => self.write_to_wire,
            Stage::SchedDelay => self.sched_delay,
            _ => None,
        }
    }
}

/// What the response side knows about an order when a latency is recorded (borrowed; copied
/// only when the latency gets into a list).
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderRef<'a> {
    /// The key's value as the correlator builds it (compound values joined by SOH).
    pub key: &'a [u8],
    pub response_msg_type: &'a [u8],
    pub exec_type: Option<u8>,
    pub ord_status: Option<u8>,
    pub response_ts_ns: u64,
    /// The order's breakdown, when `--breakdown` is on.
    pub breakdown: Option<OrderBreakdown>,
}

/// The session details a [`SlowOrder`] carries, looked up when it is admitted.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionRef<'a> {
    pub sender_comp_id: &'a str,
    pub target_comp_id: &'a str,
    pub connection: Option<ConnectionKey>,
}

/// One order event: a latency with its order, and the names of the session it belongs to
/// (looked up only by a consumer that keeps the order).
#[derive(Clone, Copy)]
pub struct OrderEvent<'a> {
    pub latency: Latency,
    pub order: &'a OrderRef<'a>,
    /// The session's CompIDs and connection (`SessionRef::default()` for a session beyond
    /// the per-session table): resolved lazily by [`OrderEvent::session`].
    pub sessions: &'a dyn SessionNames,
    /// The session has a row in the per-session table (it is among the first 4,096).
    pub session_tracked: bool,
}

impl OrderEvent<'_> {
    /// The names of the event's session.
    pub fn session(&self) -> SessionRef<'_> {
        self.sessions.names(self.latency.session)
    }
}

/// Where an event's session names are looked up (the session layer's table).
pub trait SessionNames {
    fn names(&self, session: u64) -> SessionRef<'_>;
}

/// No session table (tests, statistics rebuilt from logs).
impl SessionNames for () {
    fn names(&self, _: u64) -> SessionRef<'_> {
        SessionRef::default()
    }
}
