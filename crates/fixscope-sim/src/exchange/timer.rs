//! The entries of the exchange's timer queue: which delayed answer is due, and when.
//!
//! Plain data, apart from the engine that arms and handles them, so the event loop can
//! hold the queue without knowing the engine's internals.

/// `Timer::kind`: request `slot`'s ack (or reject) is due.
pub const TIMER_ACK: u8 = 0;
/// `Timer::kind`: the next fill of resting order `slot` is due.
pub const TIMER_FILL: u8 = 1;
/// A TestRequest's delayed Heartbeat is due (no slot).
pub const TIMER_TEST_REQUEST: u8 = 2;

/// A due event; ordered by due time, then insertion order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timer {
    pub due: u64,
    pub seq: u64,
    pub conn: u32,
    pub conn_gen: u32,
    pub slot: u32,
    pub slot_gen: u32,
    pub token: u32,
    pub kind: u8,
}
