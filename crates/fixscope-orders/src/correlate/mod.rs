//! Matching responses to the requests they answer.
//!
//! A request (NewOrderSingle D, OrderCancelRequest F, OrderCancelReplaceRequest G,
//! NewOrderMultileg AB; each order of a NewOrderList E or side of a NewOrderCross s) is
//! remembered under its correlation key (ClOrdID 11 by default, `--key` for others) within
//! its session (the TCP connection), so equal ClOrdIDs on two sessions never mix. Responses
//! (ExecutionReport 8, OrderCancelReject 9) with the same key produce latencies per stage
//! ([`Stage`]).
//!
//! **No slow order vanishes.** A request stays tracked until its order reaches a terminal
//! status, its connection closes, or the table is full (`-m`, oldest evicted first) — never
//! because it is old. `-t` is an alert threshold: a request with no response within it is
//! counted `timed_out` at that moment, and if the response still comes its true latency is
//! recorded and it is counted `late`. Every request is accounted for: matched, answered
//! before it was seen (`response_before_request`: a capture that reordered), answered
//! after a hole in its session's responses (`answered_after_capture_hole`: its first
//! response may have been lost there, so none is measured), or never answered for a
//! counted reason (still pending, evicted, connection closed, untracked).
//!
//! | file | concern |
//! |---|---|
//! | `key.rs` | which tags form the key |
//! | `facts.rs` | the fields read from a message, in one pass |
//! | `orders.rs` | the orders of a list or a cross, read from their repeating group |
//! | `rules.rs` | what a response means for the order (ack, fill, terminal) |
//! | `pending.rs` | the pending-request table: slab, index, age order, per-session lists |
//! | `early.rs` | responses that came before their request: held for the reorder window |
//! | `record.rs` | one row per request and its outcome (`--records`), beside the table |
//! | `matcher.rs` | the correlator: the rules applied to the table, and its counters |

mod early;
mod matcher;
mod pending;
mod record;
mod rules;
mod scope;

pub use early::REORDER_WINDOW_NS;
/// Stages and request types are the order layer's vocabulary ([`fixscope_model::order`]), below the
/// correlator; re-exported here where callers have always found them.
pub use fixscope_model::order::{RequestType, Stage};
// FIX's facts, key and groups: fixscope-fix's (the correlator still reads FIX through them).
pub use fixscope_fix::facts::MessageFacts;
pub use fixscope_fix::key::KeySpec;
pub use fixscope_fix::orders::{group_orders, GroupOrder};
pub use matcher::{CorrelationCounters, Correlator, CorrelatorLimits};
pub use record::{OrderRecord, Outcome, RecordBook, RequestFields};
pub use rules::is_response_type;
pub use scope::{epoch_of, scope_of, session_of};
